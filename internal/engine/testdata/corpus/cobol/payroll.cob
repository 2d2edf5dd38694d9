      *> Payroll report: a table of employees in WORKING-STORAGE,
      *> overtime computed per employee, edited pictures for output.
       IDENTIFICATION DIVISION.
       PROGRAM-ID. PAYROLL.

       DATA DIVISION.
       WORKING-STORAGE SECTION.
       01  EMPLOYEE-DATA.
           05  FILLER PIC X(26) VALUE "ALICE     0420002500ENG   ".
           05  FILLER PIC X(26) VALUE "BOB       0380001875OPS   ".
           05  FILLER PIC X(26) VALUE "CAROL     0455003200ENG   ".
           05  FILLER PIC X(26) VALUE "DAVE      0400001500SALES ".
       01  EMPLOYEE-TABLE REDEFINES EMPLOYEE-DATA.
           05  EMPLOYEE OCCURS 4 TIMES INDEXED BY EMP-IDX.
               10  EMP-NAME     PIC X(10).
               10  EMP-HOURS    PIC 9(3)V9.
               10  EMP-RATE     PIC 9(4)V99.
               10  EMP-DEPT     PIC X(6).

       01  WS-REGULAR-HOURS     PIC 9(3)V9 VALUE 40.
       01  WS-OVERTIME-HOURS    PIC 9(3)V9.
       01  WS-GROSS             PIC 9(6)V99.
       01  WS-TOTAL             PIC 9(7)V99 VALUE ZERO.
       01  WS-BONUS-RATE        PIC V99.

       01  WS-REPORT-LINE.
           05  RPT-NAME         PIC X(10).
           05  RPT-DEPT         PIC X(7).
           05  RPT-HOURS        PIC ZZ9.9.
           05  FILLER           PIC X(3) VALUE SPACES.
           05  RPT-GROSS        PIC $$$,$$9.99.
       01  WS-TOTAL-LINE.
           05  FILLER           PIC X(25) VALUE "TOTAL".
           05  RPT-TOTAL        PIC $$$$,$$9.99.

       PROCEDURE DIVISION.
       MAIN-PARA.
           DISPLAY "NAME      DEPT    HOURS        GROSS"
           PERFORM VARYING EMP-IDX FROM 1 BY 1 UNTIL EMP-IDX > 4
               PERFORM COMPUTE-PAY
               PERFORM PRINT-LINE
           END-PERFORM
           MOVE WS-TOTAL TO RPT-TOTAL
           DISPLAY WS-TOTAL-LINE
           STOP RUN.

       COMPUTE-PAY.
           EVALUATE EMP-DEPT (EMP-IDX)
               WHEN "ENG"   MOVE 0.10 TO WS-BONUS-RATE
               WHEN "SALES" MOVE 0.05 TO WS-BONUS-RATE
               WHEN OTHER   MOVE ZERO TO WS-BONUS-RATE
           END-EVALUATE
           IF EMP-HOURS (EMP-IDX) > WS-REGULAR-HOURS
               SUBTRACT WS-REGULAR-HOURS FROM EMP-HOURS (EMP-IDX)
                   GIVING WS-OVERTIME-HOURS
               COMPUTE WS-GROSS ROUNDED =
                   (WS-REGULAR-HOURS * EMP-RATE (EMP-IDX)
                    + WS-OVERTIME-HOURS * EMP-RATE (EMP-IDX) * 1.5)
                   * (1 + WS-BONUS-RATE)
           ELSE
               COMPUTE WS-GROSS ROUNDED =
                   EMP-HOURS (EMP-IDX) * EMP-RATE (EMP-IDX)
                   * (1 + WS-BONUS-RATE)
           END-IF
           ADD WS-GROSS TO WS-TOTAL.

       PRINT-LINE.
           MOVE EMP-NAME (EMP-IDX) TO RPT-NAME
           MOVE EMP-DEPT (EMP-IDX) TO RPT-DEPT
           MOVE EMP-HOURS (EMP-IDX) TO RPT-HOURS
           MOVE WS-GROSS TO RPT-GROSS
           DISPLAY WS-REPORT-LINE.
