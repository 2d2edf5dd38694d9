// Gee collections, lambdas and string handling over lines of stdin.
using Gee;

class Score : Object {
    public string player { get; construct; }
    public int points { get; construct; }

    public Score (string player, int points) {
        Object (player: player, points: points);
    }
}

int main () {
    var scores = new ArrayList<Score> ();
    var totals = new HashMap<string, int> ();
    string? line;
    while ((line = stdin.read_line ()) != null) {
        string[] parts = line.strip ().split (" ");
        if (parts.length != 2) {
            stderr.printf ("skipping \"%s\"\n", line);
            continue;
        }
        var score = new Score (parts[0], int.parse (parts[1]));
        scores.add (score);
        totals[score.player] = (totals.has_key (score.player) ? totals[score.player] : 0) + score.points;
    }

    print ("%d scores from %d players\n", scores.size, totals.size);

    var players = new ArrayList<string> ();
    players.add_all (totals.keys);
    players.sort ((a, b) => {
        int by_total = totals[b] - totals[a];
        return by_total != 0 ? by_total : strcmp (a, b);
    });
    foreach (var player in players) {
        print ("%-6s %4d\n", player, totals[player]);
    }

    var best = scores.fold<Score?> ((s, acc) => acc == null || s.points > acc.points ? s : acc, null);
    print ("best single score: %s with %d\n", best.player, best.points);

    var high = scores.filter ((s) => s.points >= 50);
    var names = new TreeSet<string> ();
    high.foreach ((s) => { names.add (s.player.up ()); return true; });
    var joined = new StringBuilder ();
    foreach (var name in names) {
        joined.append (joined.len > 0 ? ", " : "").append (name);
    }
    print ("50 or more: %s\n", joined.str);
    return 0;
}
