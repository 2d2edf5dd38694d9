      *> Reads transactions from standard input (GnuCOBOL's KEYBOARD
      *> file), one "ACCOUNT,AMOUNT" per line, and totals them.
       IDENTIFICATION DIVISION.
       PROGRAM-ID. LEDGER.

       ENVIRONMENT DIVISION.
       INPUT-OUTPUT SECTION.
       FILE-CONTROL.
           SELECT TRANSACTIONS ASSIGN TO KEYBOARD
               ORGANIZATION IS LINE SEQUENTIAL.

       DATA DIVISION.
       FILE SECTION.
       FD  TRANSACTIONS.
       01  TRANSACTION-RECORD       PIC X(40).

       WORKING-STORAGE SECTION.
       01  WS-EOF                   PIC X VALUE "N".
           88  END-OF-INPUT         VALUE "Y".
       01  WS-ACCOUNT               PIC X(10).
       01  WS-AMOUNT-TEXT           PIC X(12).
       01  WS-AMOUNT                PIC S9(7)V99.
       01  WS-BALANCE               PIC S9(8)V99 VALUE ZERO.
       01  WS-COUNT                 PIC 9(4) VALUE ZERO.
       01  WS-DEBITS                PIC 9(4) VALUE ZERO.
       01  WS-EDITED                PIC -(7)9.99.
       01  WS-COUNT-EDITED          PIC Z(3)9.

       PROCEDURE DIVISION.
       MAIN-PARA.
           OPEN INPUT TRANSACTIONS
           PERFORM UNTIL END-OF-INPUT
               READ TRANSACTIONS
                   AT END
                       SET END-OF-INPUT TO TRUE
                   NOT AT END
                       PERFORM POST-TRANSACTION
               END-READ
           END-PERFORM
           CLOSE TRANSACTIONS
           MOVE WS-COUNT TO WS-COUNT-EDITED
           DISPLAY "TRANSACTIONS: " FUNCTION TRIM(WS-COUNT-EDITED)
           DISPLAY "DEBITS:       " WS-DEBITS
           MOVE WS-BALANCE TO WS-EDITED
           DISPLAY "BALANCE:      " FUNCTION TRIM(WS-EDITED)
           IF WS-BALANCE < ZERO
               DISPLAY "STATUS:       OVERDRAWN"
           ELSE
               DISPLAY "STATUS:       OK"
           END-IF
           STOP RUN.

       POST-TRANSACTION.
           UNSTRING TRANSACTION-RECORD DELIMITED BY ","
               INTO WS-ACCOUNT WS-AMOUNT-TEXT
           END-UNSTRING
           COMPUTE WS-AMOUNT = FUNCTION NUMVAL(WS-AMOUNT-TEXT)
           ADD WS-AMOUNT TO WS-BALANCE
           ADD 1 TO WS-COUNT
           IF WS-AMOUNT < ZERO
               ADD 1 TO WS-DEBITS
           END-IF
           MOVE WS-AMOUNT TO WS-EDITED
           DISPLAY FUNCTION TRIM(WS-ACCOUNT) ": " WS-EDITED.
