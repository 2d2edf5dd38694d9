/*
 * The checkpoint tools' libcriu.so.2, which crun loads (dlopen) to drive
 * CRIU: Debian's libcriu, renamed libcriu-debian.so.2 and linked here, so
 * that every function crun looks up in this library is Debian's but two,
 * which answer crun differently, each on the path of every checkpoint and
 * every restore of a session's sandbox.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

#ifndef CRIU_VERSION_NUMBER
#error "build with -DCRIU_VERSION_NUMBER=<the shipped criu's version, e.g. 40101>"
#endif

/*
 * crun asks for CRIU's version before each checkpoint and restore, and
 * Debian's libcriu starts a `criu swrk` process for that question alone
 * (about 5 ms of a resume). The tools ship this library with the criu it
 * drives, from one Debian release, and the Dockerfile builds this file
 * with that criu's version, in libcriu's own form (major * 10000 + minor
 * * 100 + sublevel, as criu_check_version compares it).
 */
int criu_check_version(int minimum)
{
	return CRIU_VERSION_NUMBER >= minimum;
}

/*
 * crun asks CRIU for its debug log (4): thousands of lines a checkpoint,
 * each written as it comes (about 10 ms of a resume and 14 of a pause).
 * CRIU logs errors and warnings (2, its own default) unless the server's
 * environment sets MCR_CRIU_LOG_LEVEL (4 tells a failure's whole story in
 * the sandbox's checkpoint-work/dump.log or restore.log).
 */
void criu_set_log_level(int level)
{
	static void (*debian_set_log_level)(int);
	const char *want = getenv("MCR_CRIU_LOG_LEVEL");

	(void)level;
	if (!debian_set_log_level)
		debian_set_log_level = (void (*)(int))dlsym(RTLD_NEXT, "criu_set_log_level");
	if (debian_set_log_level)
		debian_set_log_level(want && *want ? atoi(want) : 2);
}
