#include <stdio.h>
#include <stdlib.h>

typedef struct node {
    int value;
    struct node *next;
} node_t;

static node_t *push(node_t *head, int value) {
    node_t *n = malloc(sizeof *n);
    if (!n) {
        perror("malloc");
        exit(EXIT_FAILURE);
    }
    n->value = value;
    n->next = head;
    return n;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int main(void) {
    node_t *head = NULL;
    for (int i = 1; i <= 5; i++)
        head = push(head, i * i);

    int values[5], n = 0;
    for (node_t *p = head; p; p = p->next)
        values[n++] = p->value;
    qsort(values, n, sizeof values[0], cmp_int);

    for (int i = 0; i < n; i++)
        printf("%d%c", values[i], i + 1 < n ? ' ' : '\n');

    while (head) {
        node_t *next = head->next;
        free(head);
        head = next;
    }
    return EXIT_SUCCESS;
}
