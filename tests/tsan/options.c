/* Linked into every executable of a ThreadSanitizer build (SANDCELL_TSAN):
 * reports go to files under /tmp/sandcell-tsan/ (made 1777 by
 * scripts/test.sh), which the suite checks afterwards, so a race is caught
 * even where a test does not look at stderr or at the exit status, and even
 * when the test runs sandcell with a cleared environment. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "log_path=/tmp/sandcell-tsan/report:exitcode=66:second_deadlock_stack=1";
}
