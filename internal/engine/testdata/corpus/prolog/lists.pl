:- initialization(main, main).

sum_list_acc([], Acc, Acc).
sum_list_acc([H|T], Acc0, Sum) :-
    Acc is Acc0 + H,
    sum_list_acc(T, Acc, Sum).

greeting --> [hello], name.
name --> [world].
name --> [prolog].

main :-
    numlist(1, 5, L),
    sum_list_acc(L, 0, S),
    format("sum ~w = ~w~n", [L, S]),
    msort([c, a, b, a], Sorted),
    format("sorted ~w~n", [Sorted]),
    maplist([X, Y]>>(Y is X * X), L, Squares),
    format("squares ~w~n", [Squares]),
    (   phrase(greeting, [hello, prolog])
    ->  writeln('parsed hello prolog')
    ;   writeln('no parse')
    ),
    current_prolog_flag(argv, Argv),
    length(Argv, N),
    format("~d arguments~n", [N]).
