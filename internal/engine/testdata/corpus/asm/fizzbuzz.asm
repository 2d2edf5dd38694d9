; FizzBuzz from 1 to the number given as the first argument (15 without
; one), with Linux system calls only: no C library.

%define SYS_WRITE 1
%define SYS_EXIT  60
%define STDOUT    1

; print address, length
%macro print 2
        mov     eax, SYS_WRITE
        mov     edi, STDOUT
        mov     rsi, %1
        mov     edx, %2
        syscall
%endmacro

        section .rodata
fizz:           db      "Fizz"
buzz:           db      "Buzz"
newline:        db      10

        section .bss
digits:         resb    20

        section .text
        global  _start

_start:
        mov     r12, 15                 ; limit
        cmp     qword [rsp], 2          ; argc
        jb      .start
        mov     rdi, [rsp + 16]         ; argv[1]
        call    parse_uint
        mov     r12, rax
.start:
        mov     r13, 1                  ; n
.loop:
        cmp     r13, r12
        ja      .done
        xor     r14d, r14d              ; printed Fizz or Buzz?
        mov     rax, r13
        xor     edx, edx
        mov     ecx, 3
        div     rcx
        test    rdx, rdx
        jnz     .not_fizz
        print   fizz, 4
        inc     r14d
.not_fizz:
        mov     rax, r13
        xor     edx, edx
        mov     ecx, 5
        div     rcx
        test    rdx, rdx
        jnz     .not_buzz
        print   buzz, 4
        inc     r14d
.not_buzz:
        test    r14d, r14d
        jnz     .end_line
        mov     rdi, r13
        call    print_uint
.end_line:
        print   newline, 1
        inc     r13
        jmp     .loop
.done:
        mov     eax, SYS_EXIT
        xor     edi, edi
        syscall

; parse_uint(rdi: NUL-terminated decimal string) -> rax
parse_uint:
        xor     eax, eax
.next:
        movzx   ecx, byte [rdi]
        sub     ecx, '0'
        cmp     ecx, 9
        ja      .end                    ; not a digit (or the NUL)
        imul    rax, rax, 10
        add     rax, rcx
        inc     rdi
        jmp     .next
.end:
        ret

; print_uint(rdi: unsigned number): writes its decimal digits
print_uint:
        mov     rax, rdi
        lea     rsi, [digits + 20]
        mov     ecx, 10
.divide:
        xor     edx, edx
        div     rcx
        add     dl, '0'
        dec     rsi
        mov     [rsi], dl
        test    rax, rax
        jnz     .divide
        lea     rdx, [digits + 20]
        sub     rdx, rsi
        mov     eax, SYS_WRITE
        mov     edi, STDOUT
        syscall
        ret
