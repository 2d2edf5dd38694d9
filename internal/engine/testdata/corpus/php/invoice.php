<?php

declare(strict_types=1);

enum Status: string
{
    case Paid = 'paid';
    case Due = 'due';
}

final class Invoice
{
    public function __construct(
        public readonly string $client,
        public readonly float $amount,
        public readonly Status $status,
    ) {}
}

$invoices = [
    new Invoice('acme', 120.0, Status::Paid),
    new Invoice('globex', 80.5, Status::Due),
    new Invoice('initech', 42.25, Status::Due),
];

$due = array_filter($invoices, fn(Invoice $i): bool => $i->status === Status::Due);
$total = array_sum(array_map(fn(Invoice $i) => $i->amount, $due));

foreach ($invoices as $inv) {
    $label = match ($inv->status) {
        Status::Paid => 'settled',
        Status::Due => 'open',
    };
    printf("%-8s %7.2f %s\n", $inv->client, $inv->amount, $label);
}
echo "due: " . number_format($total, 2) . PHP_EOL;
