>>SOURCE FORMAT FREE
*> Reads one integer a line until end of input and prints how many there
*> were, their sum, the largest and the mean: a judge's stdin program in
*> free format, as GnuCOBOL's own samples write it.
identification division.
program-id. freesum.

environment division.
input-output section.
file-control.
    select sysin assign to keyboard
        organization is line sequential.

data division.
file section.
fd sysin.
01 in-line pic x(40).

working-storage section.
01 eof-flag   pic x value "n".
   88 at-end  value "y".
01 cnt        pic 9(6) value 0.
01 total      pic s9(12) value 0.
01 biggest    pic s9(12) value 0.
01 num        pic s9(12).
01 mean       pic s9(12)v99.
01 out-num    pic -(12)9.
01 out-mean   pic -(12)9.99.

procedure division.
main-para.
    open input sysin
    perform until at-end
        read sysin
            at end set at-end to true
            not at end perform add-line
        end-read
    end-perform
    close sysin
    move cnt to out-num
    display "count: " function trim(out-num)
    move total to out-num
    display "sum: " function trim(out-num)
    move biggest to out-num
    display "max: " function trim(out-num)
    if cnt > 0
        compute mean rounded = total / cnt
        move mean to out-mean
        display "mean: " function trim(out-mean)
    end-if
    stop run.

add-line.
    if function trim(in-line) = spaces
        exit paragraph
    end-if
    compute num = function numval(in-line)
    if cnt = 0 or num > biggest
        move num to biggest
    end-if
    add 1 to cnt
    add num to total.
