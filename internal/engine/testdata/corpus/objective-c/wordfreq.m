/* Word frequencies of stdin: a WordCounter class (no Foundation, so its
 * storage is a C array it grows itself), a sort with a C comparator, and
 * the C library for reading and formatting. */
#import <ctype.h>
#import <stdio.h>
#import <stdlib.h>
#import <string.h>
#import <objc/Object.h>
#import <objc/runtime.h>

typedef struct {
    char *word;
    int count;
} Entry;

@interface WordCounter : Object
{
    Entry *entries;
    int used, capacity;
    int total;
}
+ (id)new;
- (void)free;
- (void)addWord:(const char *)word;
- (void)addLine:(char *)line;
- (void)sortByCount;
- (int)distinct;
- (int)total;
- (const Entry *)entryAt:(int)index;
@end

@implementation WordCounter
+ (id)new
{
    return class_createInstance(self, 0);   /* instance variables start zeroed */
}

- (void)free
{
    for (int i = 0; i < used; i++) {
        free(entries[i].word);
    }
    free(entries);
    object_dispose(self);
}

- (void)addWord:(const char *)word
{
    total++;
    for (int i = 0; i < used; i++) {
        if (strcmp(entries[i].word, word) == 0) {
            entries[i].count++;
            return;
        }
    }
    if (used == capacity) {
        capacity = capacity ? capacity * 2 : 16;
        entries = realloc(entries, capacity * sizeof *entries);
    }
    entries[used++] = (Entry){ strdup(word), 1 };
}

- (void)addLine:(char *)line
{
    char word[128];
    int length = 0;
    for (char *p = line;; p++) {
        if (isalpha((unsigned char)*p) || *p == '\'') {
            if (length < (int)sizeof word - 1) {
                word[length++] = tolower((unsigned char)*p);
            }
        } else {
            if (length > 0) {
                word[length] = '\0';
                [self addWord:word];
                length = 0;
            }
            if (*p == '\0') {
                break;
            }
        }
    }
}

static int byCountThenWord(const void *x, const void *y)
{
    const Entry *a = x, *b = y;
    if (a->count != b->count) {
        return b->count - a->count;
    }
    return strcmp(a->word, b->word);
}

- (void)sortByCount
{
    qsort(entries, used, sizeof *entries, byCountThenWord);
}

- (int)distinct
{
    return used;
}

- (int)total
{
    return total;
}

- (const Entry *)entryAt:(int)index
{
    return index < used ? &entries[index] : NULL;
}
@end

int main(void)
{
    WordCounter *counter = [WordCounter new];
    char *line = NULL;
    size_t size = 0;
    int lines = 0;

    while (getline(&line, &size, stdin) != -1) {
        lines++;
        [counter addLine:line];
    }
    free(line);

    [counter sortByCount];
    for (int rank = 1; rank <= 5 && rank <= [counter distinct]; rank++) {
        const Entry *e = [counter entryAt:rank - 1];
        char bar[64] = "";
        memset(bar, '#', e->count < 63 ? e->count : 63);
        printf("%d. %-8s %s\n", rank, e->word, bar);
    }
    printf("%d lines, %d distinct words, %d in all\n", lines, [counter distinct], [counter total]);

    const Entry *longest = NULL;
    long letters[26] = { 0 };
    for (int i = 0; i < [counter distinct]; i++) {
        const Entry *e = [counter entryAt:i];
        if (!longest || strlen(e->word) > strlen(longest->word)) {
            longest = e;
        }
        for (const char *p = e->word; *p; p++) {
            if (islower((unsigned char)*p)) {
                letters[*p - 'a'] += e->count;
            }
        }
    }
    if (longest) {
        printf("longest word: %s (%zu letters)\n", longest->word, strlen(longest->word));
    }
    int commonest = 0;
    for (int i = 1; i < 26; i++) {
        if (letters[i] > letters[commonest]) {
            commonest = i;
        }
    }
    printf("commonest letter: %c\n", 'a' + commonest);

    [counter free];
    return 0;
}
