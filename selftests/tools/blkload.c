// SPDX-License-Identifier: GPL-2.0
/*
 * blkload: the block-device load of `make bench` (selftests/bench.sh), in
 * place of fio, which the guest does not have. Reads or writes a block
 * device with O_DIRECT through Linux AIO (io_submit, io_getevents: no
 * library needed), keeping QD requests of BS bytes in flight, at random
 * BS-aligned offsets or one after the other, over the first SPAN MiB of
 * the device, for SECONDS seconds; then waits for what is in flight.
 *
 *   blkload DEV randread|randwrite|seqread|seqwrite BS QD SECONDS [SPAN]
 *
 * Prints one line, "IOS NANOSECONDS P50 P99": how many requests ended,
 * how long from the first submission to the last completion, and the
 * median and 99th percentile of the requests' latencies (submission to
 * completion, in nanoseconds). Every request must end with its whole
 * length: anything else (an error, a short transfer) prints why and
 * exits 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_QD 256
/* Latencies kept (the first ones, should a run make more requests). */
#define MAX_LAT (1u << 22)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void usage(void)
{
	fprintf(stderr, "usage: blkload DEV randread|randwrite|seqread|seqwrite BS QD SECONDS [SPAN_MIB]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct iocb cbs[MAX_QD], *cbp[MAX_QD];
	struct io_event ev[MAX_QD];
	uint64_t sent[MAX_QD];
	aio_context_t ctx = 0;
	uint64_t bs, span, blocks, seq = 0, t0, end, last = 0, ios = 0;
	uint32_t *lat;
	unsigned int qd, i, inflight = 0, nlat = 0;
	int fd, rnd, wr, secs;
	char *buf;

	if (argc < 6 || argc > 7)
		usage();
	if (!strcmp(argv[2], "randread"))
		rnd = 1, wr = 0;
	else if (!strcmp(argv[2], "randwrite"))
		rnd = 1, wr = 1;
	else if (!strcmp(argv[2], "seqread"))
		rnd = 0, wr = 0;
	else if (!strcmp(argv[2], "seqwrite"))
		rnd = 0, wr = 1;
	else
		usage();
	bs = strtoull(argv[3], NULL, 0);
	qd = (unsigned int)strtoul(argv[4], NULL, 0);
	secs = atoi(argv[5]);
	span = (argc == 7 ? strtoull(argv[6], NULL, 0) : 64) << 20;
	if (bs < 512 || bs % 512 || bs > (16u << 20) || qd < 1 || qd > MAX_QD || secs < 1 ||
	    span < bs)
		usage();
	blocks = span / bs;

	fd = open(argv[1], (wr ? O_WRONLY : O_RDONLY) | O_DIRECT);
	if (fd < 0) {
		fprintf(stderr, "blkload: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (posix_memalign((void **)&buf, 4096, bs * qd)) {
		fprintf(stderr, "blkload: no memory for %u buffers\n", qd);
		return 1;
	}
	for (i = 0; i < bs * qd; i++)
		buf[i] = (char)next_rand();
	lat = malloc(sizeof(*lat) * MAX_LAT);
	if (!lat || syscall(SYS_io_setup, qd, &ctx)) {
		fprintf(stderr, "blkload: io_setup: %s\n", strerror(errno));
		return 1;
	}

	t0 = now_ns();
	end = t0 + (uint64_t)secs * 1000000000u;
	/* Slot i is free when cbs[i].aio_data is 0 (data: slot + 1). */
	memset(cbs, 0, sizeof(cbs));
	for (;;) {
		unsigned int n = 0;
		uint64_t t = now_ns();
		long got;

		if (t < end) {
			for (i = 0; i < qd; i++) {
				uint64_t blk;

				if (cbs[i].aio_data)
					continue;
				blk = rnd ? next_rand() % blocks : seq++ % blocks;
				memset(&cbs[i], 0, sizeof(cbs[i]));
				cbs[i].aio_data = i + 1;
				cbs[i].aio_lio_opcode = wr ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
				cbs[i].aio_fildes = fd;
				cbs[i].aio_buf = (uintptr_t)(buf + i * bs);
				cbs[i].aio_nbytes = bs;
				cbs[i].aio_offset = blk * bs;
				sent[i] = t;
				cbp[n++] = &cbs[i];
			}
		}
		if (n) {
			long s = syscall(SYS_io_submit, ctx, n, cbp);

			if (s != (long)n) {
				fprintf(stderr, "blkload: io_submit: %ld of %u: %s\n", s, n,
					s < 0 ? strerror(errno) : "short");
				return 1;
			}
			inflight += n;
		}
		if (!inflight)
			break;
		got = syscall(SYS_io_getevents, ctx, 1, MAX_QD, ev, NULL);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "blkload: io_getevents: %s\n", strerror(errno));
			return 1;
		}
		last = now_ns();
		for (long k = 0; k < got; k++) {
			unsigned int s = (unsigned int)ev[k].data - 1;

			if (s >= qd || !cbs[s].aio_data) {
				fprintf(stderr, "blkload: a completion of no request\n");
				return 1;
			}
			if (ev[k].res != (int64_t)bs) {
				fprintf(stderr, "blkload: request at %llu ended with %lld (%s)\n",
					(unsigned long long)cbs[s].aio_offset, (long long)ev[k].res,
					ev[k].res < 0 ? strerror((int)-ev[k].res) : "short");
				return 1;
			}
			if (nlat < MAX_LAT) {
				uint64_t l = last - sent[s];

				lat[nlat++] = l > UINT32_MAX ? UINT32_MAX : (uint32_t)l;
			}
			cbs[s].aio_data = 0;
			inflight--;
			ios++;
		}
	}
	syscall(SYS_io_destroy, ctx);
	close(fd);
	if (!ios) {
		fprintf(stderr, "blkload: no request ended\n");
		return 1;
	}
	qsort(lat, nlat, sizeof(*lat), cmp_u32);
	printf("%llu %llu %u %u\n", (unsigned long long)ios, (unsigned long long)(last - t0),
	       lat[(nlat - 1) / 2], lat[(uint64_t)(nlat - 1) * 99 / 100]);
	return 0;
}
