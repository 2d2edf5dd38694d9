defmodule Account do
  defstruct owner: nil, balance: 0

  def deposit(%Account{} = acct, amount) when amount > 0 do
    {:ok, %{acct | balance: acct.balance + amount}}
  end

  def deposit(_acct, _amount), do: {:error, :invalid_amount}
end

defmodule Main do
  def run(args) do
    with {:ok, acct} <- Account.deposit(%Account{owner: "ada"}, 50),
         {:ok, acct} <- Account.deposit(acct, 25) do
      IO.puts("#{acct.owner} has #{acct.balance}")
    end

    IO.inspect(Account.deposit(%Account{}, -1))

    tasks = for n <- 1..3, do: Task.async(fn -> n * 10 end)
    IO.inspect(Enum.map(tasks, &Task.await/1))
    IO.puts(Enum.join(args, "+"))
  end
end

Main.run(System.argv())
