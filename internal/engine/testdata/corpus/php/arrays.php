<?php
$scores = ['ann' => 91, 'bob' => 78, 'cid' => 85];
arsort($scores);
foreach ($scores as $name => $score) {
    echo ucfirst($name), ": ", str_repeat('*', intdiv($score, 10)), "\n";
}
[$first, $second] = array_keys($scores);
echo "top two: $first, $second\n";
echo json_encode(['count' => count($scores), 'avg' => round(array_sum($scores) / count($scores), 1)]), "\n";
$lines = explode("\n", trim(file_get_contents('php://stdin')));
echo implode(',', array_map('strrev', $lines)), "\n";
