--  A generic bounded stack in its own package, used by a reverse Polish
--  notation calculator: one file, split into its units by gnatchop.

generic
   type Element is private;
   Capacity : Positive;
package Bounded_Stacks is
   type Stack is limited private;

   Overflow, Underflow : exception;

   procedure Push (S : in out Stack; Item : Element);
   procedure Pop (S : in out Stack; Item : out Element);
   function Size (S : Stack) return Natural;

private
   type Element_Array is array (1 .. Capacity) of Element;

   type Stack is record
      Items : Element_Array;
      Top   : Natural := 0;
   end record;
end Bounded_Stacks;

package body Bounded_Stacks is

   procedure Push (S : in out Stack; Item : Element) is
   begin
      if S.Top = Capacity then
         raise Overflow;
      end if;
      S.Top := S.Top + 1;
      S.Items (S.Top) := Item;
   end Push;

   procedure Pop (S : in out Stack; Item : out Element) is
   begin
      if S.Top = 0 then
         raise Underflow;
      end if;
      Item := S.Items (S.Top);
      S.Top := S.Top - 1;
   end Pop;

   function Size (S : Stack) return Natural is (S.Top);

end Bounded_Stacks;

with Ada.Text_IO;         use Ada.Text_IO;
with Ada.Strings.Fixed;   use Ada.Strings.Fixed;
with Bounded_Stacks;

procedure RPN is
   package Integer_Stacks is new Bounded_Stacks (Element => Integer, Capacity => 8);
   use Integer_Stacks;

   function Evaluate (Expression : String) return Integer is
      S     : Stack;
      First : Positive := Expression'First;
      Last  : Natural;
      A, B  : Integer;
   begin
      while First <= Expression'Last loop
         Last := Index (Expression (First .. Expression'Last), " ");
         if Last = 0 then
            Last := Expression'Last + 1;
         end if;
         declare
            Token : constant String := Expression (First .. Last - 1);
         begin
            if Token'Length = 1 and then Index ("+-*/", Token) > 0 then
               Pop (S, B);
               Pop (S, A);
               case Token (Token'First) is
                  when '+'    => Push (S, A + B);
                  when '-'    => Push (S, A - B);
                  when '*'    => Push (S, A * B);
                  when others => Push (S, A / B);
               end case;
            elsif Token'Length > 0 then
               Push (S, Integer'Value (Token));
            end if;
         end;
         First := Last + 1;
      end loop;
      if Size (S) /= 1 then
         raise Constraint_Error with "expression leaves" & Natural'Image (Size (S)) & " values";
      end if;
      Pop (S, A);
      return A;
   end Evaluate;

   type Case_Index is range 1 .. 5;
   Cases : constant array (Case_Index) of access constant String :=
     (new String'("3 4 + 2 *"),
      new String'("5 1 2 + 4 * + 3 -"),
      new String'("1 +"),
      new String'("10 2 8 * + 3 -"),
      new String'("6 0 /"));
begin
   for I in Cases'Range loop
      begin
         Put_Line (Cases (I).all & " = " & Trim (Integer'Image (Evaluate (Cases (I).all)), Ada.Strings.Left));
      exception
         when Underflow =>
            Put_Line (Cases (I).all & " : not enough operands");
         when Constraint_Error =>
            Put_Line (Cases (I).all & " : division by zero or overflow");
      end;
   end loop;
end RPN;
