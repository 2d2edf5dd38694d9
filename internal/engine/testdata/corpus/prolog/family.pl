:- initialization(main, main).

parent(tom, bob).
parent(tom, liz).
parent(bob, ann).
parent(bob, pat).
parent(pat, jim).

grandparent(X, Z) :- parent(X, Y), parent(Y, Z).

ancestor(X, Y) :- parent(X, Y).
ancestor(X, Y) :- parent(X, Z), ancestor(Z, Y).

main :-
    findall(G, grandparent(tom, G), Gs),
    format("tom's grandchildren: ~w~n", [Gs]),
    aggregate_all(count, ancestor(tom, _), N),
    format("tom has ~d descendants~n", [N]),
    (   ancestor(liz, jim)
    ->  writeln(yes)
    ;   writeln('liz is not an ancestor of jim')
    ).
