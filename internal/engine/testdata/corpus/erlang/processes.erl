-module(processes).
-export([main/0]).

main() ->
    Parent = self(),
    Pids = [spawn(fun() -> Parent ! {self(), N, N * N} end) || N <- lists:seq(1, 4)],
    Results = [receive {Pid, N, Sq} -> {N, Sq} end || Pid <- Pids],
    io:format("~p~n", [Results]),
    Counter = spawn(fun() -> counter(0) end),
    [Counter ! incr || _ <- lists:seq(1, 3)],
    Counter ! {get, self()},
    receive {count, C} -> io:format("count: ~b~n", [C]) end.

counter(N) ->
    receive
        incr -> counter(N + 1);
        {get, From} -> From ! {count, N}
    end.
