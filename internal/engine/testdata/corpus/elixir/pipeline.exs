defmodule WordCount do
  @moduledoc "Counts words in a text."

  def top(text, n \\ 3) do
    text
    |> String.downcase()
    |> String.split(~r/[^a-z]+/, trim: true)
    |> Enum.frequencies()
    |> Enum.sort_by(fn {word, count} -> {-count, word} end)
    |> Enum.take(n)
  end
end

IO.read(:stdio, :eof)
|> WordCount.top()
|> Enum.each(fn {word, count} -> IO.puts("#{word}: #{count}") end)

case Integer.parse("42abc") do
  {n, rest} -> IO.puts("parsed #{n}, rest #{inspect(rest)}")
  :error -> IO.puts("no number")
end
