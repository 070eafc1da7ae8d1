/* Captures this process's stderr (the runtime's log) so that a test can assert the complete log
 * of one run: test_log_begin() before celerity_runtime_init, test_log_end() after shutdown; the
 * captured text is echoed to the real stderr. Lines are compared without their timestamps, as
 * "[N0] LEVEL message", in any order (chunks finish in any order), and every line must be
 * expected: a follow-on error fails the test. Continuation lines of a multi-line report (those
 * not starting with '[') are joined to their report with " | ". Needs _POSIX_C_SOURCE (dup, dup2, fileno). */
#ifndef CELERITY_TEST_LOG_H
#define CELERITY_TEST_LOG_H

#include <time.h>
#include <unistd.h>

#include "test_check.h"

enum { TEST_LOG_MAX_LINES = 64, TEST_LOG_LINE = 1024 };

typedef struct test_log {
    int saved_stderr;
    FILE* file;
    size_t count;
    char lines[TEST_LOG_MAX_LINES][TEST_LOG_LINE];
} test_log;

static inline void test_log_begin(test_log* log) {
    fflush(stderr);
    log->file = tmpfile();
    log->saved_stderr = dup(2);
    log->count = 0;
    if (log->file == NULL || log->saved_stderr < 0 || dup2(fileno(log->file), 2) < 0) {
        fprintf(stderr, "cannot capture stderr\n");
        exit(EXIT_FAILURE);
    }
}

/* Blocks until the text captured so far (its first 16 KiB) contains `text`; a test that waits
 * for a report this way needs no timing assumptions (its ctest TIMEOUT bounds a report that
 * never comes). Callable from any thread. */
static inline void test_log_wait_for(const test_log* log, const char* text) {
    char seen[16 * 1024]; /* per caller: kernels of several chunks wait at once */
    for (;;) {
        fflush(stderr);
        ssize_t n = pread(fileno(log->file), seen, sizeof seen - 1, 0);
        if (n > 0) {
            seen[n] = '\0';
            if (strstr(seen, text) != NULL) return;
        }
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
}

/* "[N0] 2026-01-01T00:00:00.000000Z ERROR text" -> "[N0] ERROR text". */
static inline void test_log_normalise(const char* in, char* out) {
    const char* p = in;
    size_t n = 0;
    if (p[0] == '[') {
        while (*p != '\0' && *p != ' ' && n + 1 < TEST_LOG_LINE) out[n++] = *p++;
        while (*p == ' ') ++p;
        out[n++] = ' ';
    }
    while (*p != '\0' && *p != ' ') ++p; /* the timestamp */
    while (*p == ' ') ++p;
    while (*p != '\0' && *p != '\n' && n + 1 < TEST_LOG_LINE) {
        /* one space between level and message, however the level is padded */
        if (*p == ' ' && p[1] == ' ') {
            ++p;
            continue;
        }
        out[n++] = *p++;
    }
    out[n] = '\0';
}

static inline void test_log_end(test_log* log) {
    fflush(stderr);
    dup2(log->saved_stderr, 2);
    close(log->saved_stderr);
    rewind(log->file);
    char raw[TEST_LOG_LINE * 4];
    while (fgets(raw, sizeof raw, log->file) != NULL) {
        fputs(raw, stderr);
        if (raw[0] != '[' && log->count > 0 && log->count <= TEST_LOG_MAX_LINES) {
            char* line = log->lines[log->count - 1];
            const char* p = raw;
            while (*p == ' ') ++p;
            size_t used = strlen(line), len = strcspn(p, "\n");
            if (used + 3 + len < TEST_LOG_LINE) {
                memcpy(line + used, " | ", 3);
                memcpy(line + used + 3, p, len);
                line[used + 3 + len] = '\0';
            }
            continue;
        }
        if (log->count < TEST_LOG_MAX_LINES) test_log_normalise(raw, log->lines[log->count]);
        ++log->count;
    }
    fclose(log->file);
}

/* Whether `line` matches `pattern`, in which '*' stands for any text (nothing else is special). */
static inline int test_log_match(const char* pattern, const char* line) {
    if (*pattern == '\0') return *line == '\0';
    if (*pattern == '*') {
        for (const char* l = line;; ++l) {
            if (test_log_match(pattern + 1, l)) return 1;
            if (*l == '\0') return 0;
        }
    }
    return *line == *pattern && test_log_match(pattern + 1, line + 1);
}

/* Expects the captured lines to be exactly `expected` (n entries, patterns as in
 * test_log_match), in any order. */
static inline void test_log_expect(const test_log* log, const char* const* expected, size_t n) {
    int used[TEST_LOG_MAX_LINES] = {0};
    if (log->count != n) {
        fprintf(stderr, "log has %zu line(s), expected %zu\n", log->count, n);
        ++celerity_test_failures;
    }
    for (size_t e = 0; e < n; ++e) {
        int found = 0;
        for (size_t l = 0; l < log->count && l < TEST_LOG_MAX_LINES && !found; ++l) {
            if (used[l]) continue;
            if (test_log_match(expected[e], log->lines[l])) used[l] = found = 1;
        }
        if (!found) {
            fprintf(stderr, "expected log line not found: %s\n", expected[e]);
            ++celerity_test_failures;
        }
    }
    for (size_t l = 0; l < log->count && l < TEST_LOG_MAX_LINES; ++l) {
        if (!used[l]) {
            fprintf(stderr, "unexpected log line: %s\n", log->lines[l]);
            ++celerity_test_failures;
        }
    }
}

#endif
