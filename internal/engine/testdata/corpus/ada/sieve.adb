with Ada.Text_IO;         use Ada.Text_IO;
with Ada.Integer_Text_IO; use Ada.Integer_Text_IO;

--  Reads limits from standard input, one per line, and prints the primes
--  up to each with the Sieve of Eratosthenes.
procedure Sieve is
   Max_Limit : constant := 1_000;
   subtype Candidate is Positive range 2 .. Max_Limit;
   type Prime_Flags is array (Candidate) of Boolean;

   function Primes_Up_To (Limit : Candidate) return Prime_Flags is
      Is_Prime : Prime_Flags := (others => True);
      N        : Positive := 2;
      Multiple : Positive;
   begin
      while N * N <= Limit loop
         if Is_Prime (N) then
            Multiple := N * N;
            while Multiple <= Limit loop
               Is_Prime (Multiple) := False;
               Multiple := Multiple + N;
            end loop;
         end if;
         N := N + 1;
      end loop;
      return Is_Prime;
   end Primes_Up_To;

   Limit : Integer;
begin
   while not End_Of_File loop
      Get (Limit);
      if Limit not in Candidate then
         Put_Line ("limit" & Integer'Image (Limit) & " is out of range");
      else
         declare
            Flags : constant Prime_Flags := Primes_Up_To (Limit);
            Count : Natural := 0;
         begin
            Put ("primes up to");
            Put (Limit, Width => 4);
            Put (":");
            for N in Candidate'First .. Limit loop
               if Flags (N) then
                  Put (N, Width => 4);
                  Count := Count + 1;
               end if;
            end loop;
            New_Line;
            Put_Line ("count:" & Natural'Image (Count));
         end;
      end if;
      if not End_Of_File then
         Skip_Line;
      end if;
   end loop;
end Sieve;
