; Sorts the numbers given as arguments with the C library's qsort and
; prints them with printf: main is called by the C runtime, so the
; program is linked with gcc.

        default rel
        extern  printf, qsort, atol, malloc, free
        global  main

        section .rodata
fmt_count:      db      "sorting %d numbers", 10, 0
fmt_item:       db      "%ld", 0
fmt_sep:        db      ", ", 0
fmt_end:        db      10, 0
fmt_sum:        db      "sum %ld, min %ld, max %ld", 10, 0

        section .text

; int compare(const void *a, const void *b) for longs, without overflow
compare:
        mov     rax, [rdi]
        mov     rcx, [rsi]
        xor     edx, edx
        cmp     rax, rcx
        setg    dl
        setl    al
        movzx   eax, al
        sub     edx, eax
        mov     eax, edx
        ret

main:
        push    rbp
        mov     rbp, rsp
        push    rbx
        push    r12
        push    r13
        push    r14                     ; four pushes after rbp: rsp is 16-byte aligned

        lea     r12d, [rdi - 1]         ; count = argc - 1
        lea     r13, [rsi + 8]          ; &argv[1]

        lea     rdi, [fmt_count]
        mov     esi, r12d
        xor     eax, eax
        call    printf

        movsxd  rdi, r12d
        shl     rdi, 3
        call    malloc
        mov     r14, rax                ; long values[count]

        xor     ebx, ebx
.parse:
        cmp     ebx, r12d
        jge     .sort
        mov     rdi, [r13 + rbx * 8]
        call    atol
        mov     [r14 + rbx * 8], rax
        inc     ebx
        jmp     .parse

.sort:
        mov     rdi, r14
        movsxd  rsi, r12d
        mov     edx, 8
        lea     rcx, [compare]
        call    qsort

        xor     ebx, ebx
.print:
        cmp     ebx, r12d
        jge     .summary
        test    ebx, ebx
        jz      .item
        lea     rdi, [fmt_sep]
        xor     eax, eax
        call    printf
.item:
        lea     rdi, [fmt_item]
        mov     rsi, [r14 + rbx * 8]
        xor     eax, eax
        call    printf
        inc     ebx
        jmp     .print

.summary:
        lea     rdi, [fmt_end]
        xor     eax, eax
        call    printf

        xor     esi, esi                ; sum
        xor     ebx, ebx
.add:
        cmp     ebx, r12d
        jge     .report
        add     rsi, [r14 + rbx * 8]
        inc     ebx
        jmp     .add
.report:
        lea     rdi, [fmt_sum]
        mov     rdx, [r14]              ; min: the first after sorting
        movsxd  rax, r12d
        mov     rcx, [r14 + rax * 8 - 8]
        xor     eax, eax
        call    printf

        mov     rdi, r14
        call    free

        xor     eax, eax
        pop     r14
        pop     r13
        pop     r12
        pop     rbx
        pop     rbp
        ret
