#!/usr/bin/env escript
%% -*- erlang -*-
%%! -smp enable

-record(item, {name, price}).

main(Args) ->
    Items = [#item{name = "pen", price = 2}, #item{name = "pad", price = 5}],
    Total = lists:foldl(fun(#item{price = P}, Acc) -> Acc + P end, 0, Items),
    io:format("total: ~p~n", [Total]),
    io:format("args: ~p~n", [Args]),
    [io:format("~s~n", [string:uppercase(N)]) || #item{name = N} <- Items],
    case Args of
        [] -> io:format("no args~n");
        [First | _] -> io:format("first: ~s~n", [First])
    end.
