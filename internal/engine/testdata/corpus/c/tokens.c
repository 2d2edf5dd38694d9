#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define MAX_LINE 256

int main(int argc, char *argv[]) {
    char line[MAX_LINE];
    const char *delims = argc > 1 ? argv[1] : " ";
    int lineno = 0;

    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        lineno++;
        int count = 0;
        for (char *tok = strtok(line, delims); tok; tok = strtok(NULL, delims)) {
            for (char *c = tok; *c; c++)
                *c = (char)toupper((unsigned char)*c);
            printf("%s[%s]", count++ ? " " : "", tok);
        }
        printf(" (%d)\n", count);
    }
    fprintf(stderr, "%d lines\n", lineno);
    return 0;
}
