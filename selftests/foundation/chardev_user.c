// SPDX-License-Identifier: GPL-2.0
/*
 * The user-space side of chardev.sh: read, write and poll of
 * /dev/rdma_chardev_test (rdma_chardev_test.rs), a queue of at most 4
 * records of 1 to 64 bytes per open file.
 *
 * usage: chardev_user records|blocking|poll|epoll|signal
 * Prints what failed and exits 1, or exits 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "../lib/check.h"

#define DEV "/dev/rdma_chardev_test"
#define DEPTH 4
#define REC 64

struct stats {
	uint64_t writes, reads, polls, releases;
};
#define IOC_STATS _IOR('c', 1, struct stats)

/* An address nothing is mapped at (volatile: the compiler may not see it). */
static void *volatile bad_ptr = (void *)8;

static int open_dev(int flags)
{
	int fd = open(DEV, O_RDWR | flags);

	CHECK(fd >= 0, "open " DEV);
	return fd;
}

static struct stats stats_of(int fd)
{
	struct stats s;

	CHECK(ioctl(fd, IOC_STATS, &s) == 0, "IOC_STATS");
	return s;
}

static void put(int fd, const char *text)
{
	ssize_t n = write(fd, text, strlen(text));

	CHECK(n == (ssize_t)strlen(text), "write '%s' gave %zd", text, n);
}

static void get(int fd, const char *want)
{
	char buf[REC + 1];
	ssize_t n = read(fd, buf, sizeof(buf));

	CHECK(n == (ssize_t)strlen(want) && !memcmp(buf, want, n), "read %zd bytes, want '%s'",
	      n, want);
}

/* Records in order, whole; every refusal with its errno and nothing lost. */
static void records(void)
{
	int fd = open_dev(O_NONBLOCK);
	char small[2], big[REC + 1];
	struct stats s;

	memset(big, 'x', sizeof(big));
	CHECK(read(fd, big, sizeof(big)) == -1 && errno == EAGAIN, "empty read");
	CHECK(write(fd, big, REC + 1) == -1 && errno == EINVAL, "write of 65 bytes");
	CHECK(write(fd, bad_ptr, 4) == -1 && errno == EFAULT, "write from a bad pointer");
	put(fd, "one");
	put(fd, "two");
	put(fd, "three");
	put(fd, "four");
	CHECK(write(fd, "five", 4) == -1 && errno == EAGAIN, "write to a full queue");
	CHECK(read(fd, small, sizeof(small)) == -1 && errno == EINVAL, "read into 2 bytes");
	CHECK(read(fd, bad_ptr, REC) == -1 && errno == EFAULT, "read to a bad pointer");
	get(fd, "one");
	get(fd, "two");
	put(fd, "five");
	get(fd, "three");
	get(fd, "four");
	get(fd, "five");
	CHECK(read(fd, big, sizeof(big)) == -1 && errno == EAGAIN, "read after the last");
	s = stats_of(fd);
	CHECK(s.writes == 5 && s.reads == 5, "stats: %llu writes %llu reads",
	      (unsigned long long)s.writes, (unsigned long long)s.reads);
	close(fd);
}

struct later {
	int fd;
	int read; /* read one record, else write "late" */
	int ms;
};

static void *later_fn(void *arg)
{
	struct later *l = arg;
	char buf[REC];

	usleep(l->ms * 1000);
	if (l->read)
		CHECK(read(l->fd, buf, sizeof(buf)) > 0, "the other thread's read");
	else
		put(l->fd, "late");
	return NULL;
}

static pthread_t start_later(struct later *l)
{
	pthread_t t;

	CHECK(!pthread_create(&t, NULL, later_fn, l), "pthread_create");
	return t;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A blocking reader waits for a writer, a blocking writer for room. */
static void blocking(void)
{
	int fd = open_dev(0), i;
	struct later l = { fd, 0, 300 };
	pthread_t t = start_later(&l);
	double t0 = now();

	get(fd, "late");
	CHECK(now() - t0 >= 0.25, "the read returned before the write");
	pthread_join(t, NULL);
	for (i = 0; i < DEPTH; i++)
		put(fd, "full");
	l.read = 1;
	t = start_later(&l);
	t0 = now();
	put(fd, "room");
	CHECK(now() - t0 >= 0.25, "the write returned before there was room");
	pthread_join(t, NULL);
	for (i = 0; i < DEPTH - 1; i++)
		get(fd, "full");
	get(fd, "room");
	close(fd);
}

/* poll(2): the events as the queue is; a write wakes a poller. */
static void poll_events(void)
{
	int fd = open_dev(O_NONBLOCK), i;
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT };
	struct later l = { fd, 0, 300 };
	pthread_t t;
	double t0;

	CHECK(poll(&p, 1, 0) == 1 && p.revents == POLLOUT, "empty: revents %#x", p.revents);
	p.events = POLLIN;
	t = start_later(&l);
	t0 = now();
	CHECK(poll(&p, 1, 10000) == 1 && p.revents == POLLIN, "woken: revents %#x",
	      p.revents);
	CHECK(now() - t0 >= 0.25 && now() - t0 < 9, "woken after %.2f s", now() - t0);
	pthread_join(t, NULL);
	for (i = 1; i < DEPTH; i++)
		put(fd, "more");
	p.events = POLLIN | POLLOUT;
	CHECK(poll(&p, 1, 0) == 1 && p.revents == POLLIN, "full: revents %#x", p.revents);
	CHECK(stats_of(fd).polls >= 3, "polls counted");
	close(fd);
}

/*
 * epoll: an event when a record arrives; then the file is closed while
 * still in the epoll set (its entry goes at release, before the queue it
 * waits on is freed: KASAN would see otherwise) and released.
 */
static void epoll_events(void)
{
	int fd = open_dev(O_NONBLOCK), other = open_dev(0), ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN }, got;
	struct later l = { fd, 0, 200 };
	uint64_t releases;
	pthread_t t;

	CHECK(ep >= 0, "epoll_create1");
	CHECK(!epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), "EPOLL_CTL_ADD");
	CHECK(epoll_wait(ep, &got, 1, 0) == 0, "an event on an empty queue");
	t = start_later(&l);
	CHECK(epoll_wait(ep, &got, 1, 10000) == 1 && (got.events & EPOLLIN), "no event");
	pthread_join(t, NULL);
	releases = stats_of(other).releases;
	close(fd);
	CHECK(stats_of(other).releases == releases + 1, "the file in the epoll set released");
	CHECK(epoll_wait(ep, &got, 1, 0) == 0, "an event from a closed file");
	close(ep);
	close(other);
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* A blocking read ends with EINTR on a signal without SA_RESTART. */
static void signal_interrupts(void)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	int fd = open_dev(0);
	char buf[REC];

	CHECK(!sigaction(SIGALRM, &sa, NULL), "sigaction");
	alarm(1);
	CHECK(read(fd, buf, sizeof(buf)) == -1 && errno == EINTR, "read not interrupted");
	close(fd);
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(c, "records"))
		records();
	else if (!strcmp(c, "blocking"))
		blocking();
	else if (!strcmp(c, "poll"))
		poll_events();
	else if (!strcmp(c, "epoll"))
		epoll_events();
	else if (!strcmp(c, "signal"))
		signal_interrupts();
	else {
		fprintf(stderr, "usage: chardev_user records|blocking|poll|epoll|signal\n");
		return 2;
	}
	return 0;
}
