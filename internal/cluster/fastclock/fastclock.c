// fastclock.c is an LD_PRELOAD library that makes a process's clocks run
// fast, and its wall clock jump, for the clock faults of faults/ and of
// loadgen nemesis. internal/cluster embeds it and builds it with the
// system's C compiler (BuildClockLibrary).
//
//   FASTCLOCK_RATE=4          every clock runs 4 times as fast as the real
//                             one, from the process's first reading of it
//   FASTCLOCK_JUMP_FILE=PATH  the wall clock (CLOCK_REALTIME, gettimeofday,
//                             time) is ahead by the number of seconds written
//                             in PATH, read again at most every 10 ms
//
// Debian's faketime does this too, but cannot start redis-server: the
// jemalloc linked into it reads the clock while libfaketime is still
// initialising, and libfaketime gives up. This library needs no
// initialisation that allocates: it reads the real clocks with the
// clock_gettime system call (not the vDSO it replaces), and the settings
// with getenv, open and read.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long real_clock(clockid_t clk, struct timespec *ts) {
	return syscall(SYS_clock_gettime, clk, ts);
}

static long long ns(const struct timespec *ts) {
	return (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

static double rate(void) {
	static double r; // 0 until read
	if (r == 0) {
		const char *s = getenv("FASTCLOCK_RATE");
		double v = s ? strtod(s, NULL) : 1;
		r = v > 0 ? v : 1;
	}
	return r;
}

// jump returns the wall clock's jump in nanoseconds.
static long long jump(void) {
	static long long jump_ns, checked_ns;
	const char *path = getenv("FASTCLOCK_JUMP_FILE");
	if (!path) {
		return 0;
	}
	struct timespec now;
	real_clock(CLOCK_MONOTONIC, &now);
	if (checked_ns != 0 && ns(&now) - checked_ns < 10000000LL) {
		return jump_ns;
	}
	checked_ns = ns(&now);
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		return jump_ns;
	}
	char buf[64];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n > 0) {
		buf[n] = 0;
		jump_ns = (long long)(strtod(buf, NULL) * 1e9);
	}
	return jump_ns;
}

int clock_gettime(clockid_t clk, struct timespec *ts) {
	static long long start[16]; // per clock: its real reading when first read
	if (real_clock(clk, ts) != 0) {
		return -1;
	}
	if (clk < 0 || clk >= 16 || clk == CLOCK_PROCESS_CPUTIME_ID || clk == CLOCK_THREAD_CPUTIME_ID) {
		return 0;
	}
	long long now = ns(ts);
	if (start[clk] == 0) {
		start[clk] = now;
	}
	long long fake = start[clk] + (long long)((double)(now - start[clk]) * rate());
	if (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE) {
		fake += jump();
	}
	ts->tv_sec = fake / 1000000000LL;
	ts->tv_nsec = fake % 1000000000LL;
	return 0;
}

int gettimeofday(struct timeval *tv, void *tz) {
	(void)tz;
	struct timespec ts;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0) {
		return -1;
	}
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

time_t time(time_t *t) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (t) {
		*t = ts.tv_sec;
	}
	return ts.tv_sec;
}
