program Records;

{$mode objfpc}{$H+}

uses
  SysUtils;

type
  TPerson = record
    Name: string;
    Age: Integer;
  end;

var
  People: array[1..3] of TPerson;
  I, Total: Integer;

function Describe(const P: TPerson): string;
begin
  Result := Format('%s is %d', [P.Name, P.Age]);
end;

begin
  People[1].Name := 'Niklaus'; People[1].Age := 89;
  People[2].Name := 'Anders';  People[2].Age := 64;
  People[3].Name := 'Florian'; People[3].Age := 50;
  Total := 0;
  for I := Low(People) to High(People) do
  begin
    WriteLn(Describe(People[I]));
    Inc(Total, People[I].Age);
  end;
  WriteLn('average: ', Total / Length(People):0:1);
end.
