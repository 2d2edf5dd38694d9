program CounterDemo;

{$mode objfpc}{$H+}

uses
  Classes, SysUtils;

type
  TCounter = class
  private
    FCount: Integer;
  public
    procedure Increment(By: Integer = 1);
    property Count: Integer read FCount;
  end;

procedure TCounter.Increment(By: Integer);
begin
  FCount := FCount + By;
end;

var
  Counter: TCounter;
  List: TStringList;
  S: string;
begin
  Counter := TCounter.Create;
  List := TStringList.Create;
  try
    Counter.Increment;
    Counter.Increment(4);
    WriteLn('count = ', Counter.Count);
    List.CommaText := 'pear,apple,fig';
    List.Sort;
    for S in List do
      Write(UpperCase(S), ' ');
    WriteLn;
    try
      StrToInt('abc');
    except
      on E: EConvertError do
        WriteLn('error: ', E.Message);
    end;
  finally
    List.Free;
    Counter.Free;
  end;
end.
