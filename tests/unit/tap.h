/*
 * tap.h: a tiny unit-test framework that prints TAP for prove.
 *
 * Each check prints "ok N - name" or "not ok N - name" and, on failure,
 * the expression, the expected and the actual value and file:line as TAP
 * diagnostics (# lines).  tap_done() prints the plan and returns the exit
 * status: 0 when every check passed.
 *
 *   int main(void) {
 *       IS_INT(parse(...), 0, "parses 12");
 *       IS_STR(buf, "\"a\"", "escapes a quote");
 *       return tap_done();
 *   }
 */
#ifndef PTKIT_TAP_H
#define PTKIT_TAP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct tap_state {
	int run;
	int failed;
};

/* One state per test program; unit tests are single-file programs. */
static struct tap_state tap_state;

static inline int
tap_result(int pass, const char *file, int line, const char *expr,
    const char *fmt, ...)
{
	va_list ap;

	tap_state.run++;
	printf("%sok %d - ", pass ? "" : "not ", tap_state.run);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!pass) {
		tap_state.failed++;
		printf("#   failed at %s:%d\n#   expression: %s\n", file, line,
		    expr);
	}
	fflush(stdout);
	return pass;
}

#define OK(expr, ...) \
	tap_result(!!(expr), __FILE__, __LINE__, #expr, __VA_ARGS__)

#define IS_INT(actual, expected, ...) do {				\
	long long tap_a_ = (long long)(actual);				\
	long long tap_e_ = (long long)(expected);			\
	if (!tap_result(tap_a_ == tap_e_, __FILE__, __LINE__,		\
	    #actual " == " #expected, __VA_ARGS__))			\
		printf("#   expected: %lld\n#        got: %lld\n",	\
		    tap_e_, tap_a_);					\
} while (0)

#define IS_U64(actual, expected, ...) do {				\
	uint64_t tap_a_ = (uint64_t)(actual);				\
	uint64_t tap_e_ = (uint64_t)(expected);				\
	if (!tap_result(tap_a_ == tap_e_, __FILE__, __LINE__,		\
	    #actual " == " #expected, __VA_ARGS__))			\
		printf("#   expected: %" PRIu64 "\n#        got: %"	\
		    PRIu64 "\n", tap_e_, tap_a_);			\
} while (0)

#define IS_STR(actual, expected, ...) do {				\
	const char *tap_a_ = (actual);					\
	const char *tap_e_ = (expected);				\
	int tap_p_ = tap_a_ != NULL && tap_e_ != NULL &&		\
	    strcmp(tap_a_, tap_e_) == 0;				\
	if (!tap_result(tap_p_, __FILE__, __LINE__,			\
	    #actual " eq " #expected, __VA_ARGS__))			\
		printf("#   expected: '%s'\n#        got: '%s'\n",	\
		    tap_e_ ? tap_e_ : "(null)",				\
		    tap_a_ ? tap_a_ : "(null)");			\
} while (0)

/* Compares len bytes; prints both in hex on failure. */
#define IS_MEM(actual, expected, len, ...) do {				\
	const unsigned char *tap_a_ = (const void *)(actual);		\
	const unsigned char *tap_e_ = (const void *)(expected);		\
	size_t tap_n_ = (len), tap_i_;					\
	if (!tap_result(memcmp(tap_a_, tap_e_, tap_n_) == 0,		\
	    __FILE__, __LINE__, #actual " == " #expected, __VA_ARGS__)) {\
		printf("#   expected:");				\
		for (tap_i_ = 0; tap_i_ < tap_n_; tap_i_++)		\
			printf(" %02x", tap_e_[tap_i_]);		\
		printf("\n#        got:");				\
		for (tap_i_ = 0; tap_i_ < tap_n_; tap_i_++)		\
			printf(" %02x", tap_a_[tap_i_]);		\
		printf("\n");						\
	}								\
} while (0)

/*
 * A step a test needs but does not itself check (writing its input,
 * removing its directory), for a function whose result must be looked
 * at: a failure (a negative result) counts as a failed check, success
 * prints nothing.
 */
#define STEP(expr) do {							\
	if ((expr) < 0)							\
		tap_result(0, __FILE__, __LINE__, #expr, "step failed");	\
} while (0)

/* Prints a diagnostic line. */
#define DIAG(...) do { printf("# "); printf(__VA_ARGS__); putchar('\n'); } while (0)

static inline int
tap_done(void)
{
	printf("1..%d\n", tap_state.run);
	if (tap_state.failed > 0)
		printf("# %d of %d checks failed\n", tap_state.failed,
		    tap_state.run);
	return tap_state.failed > 0 || tap_state.run == 0;
}

#endif
