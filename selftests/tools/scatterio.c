// SPDX-License-Identifier: GPL-2.0
/*
 * scatterio: one O_DIRECT request whose data is scattered over pieces of
 * pages, for the RNBD client's bounce path (selftests/rtrs/rnbd_client.sh):
 * 4096 bytes at sector SECTOR of DEV, as eight 512-byte pieces, each at
 * another offset of another page, so that they do not make one region a
 * memory region could map without a copy.
 *
 *   scatterio DEV write SECTOR FILE   writes FILE's first 4096 bytes
 *   scatterio DEV read SECTOR FILE    reads 4096 bytes into FILE
 *
 * Exits 0 when the whole request was done, 1 with a line saying why
 * otherwise.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define PIECES 8
#define PIECE 512
#define PAGE 4096

int main(int argc, char **argv)
{
	struct iovec iov[PIECES];
	char data[PIECES * PIECE];
	unsigned char *pages;
	int write_it, fd, f, i;
	off_t at;
	ssize_t n;

	if (argc != 5 || (strcmp(argv[2], "write") && strcmp(argv[2], "read"))) {
		fprintf(stderr, "usage: scatterio DEV write|read SECTOR FILE\n");
		return 1;
	}
	write_it = !strcmp(argv[2], "write");
	at = (off_t)strtoull(argv[3], NULL, 0) * 512;
	if (posix_memalign((void **)&pages, PAGE, PIECES * PAGE)) {
		fprintf(stderr, "scatterio: no memory\n");
		return 1;
	}
	memset(pages, 0xa5, PIECES * PAGE);
	/* Piece i: page i, from byte 512 * ((i + 1) % 8): never a page's
	 * start and end together, never one region. */
	for (i = 0; i < PIECES; i++) {
		iov[i].iov_base = pages + i * PAGE + PIECE * ((i + 1) % PIECES);
		iov[i].iov_len = PIECE;
	}
	fd = open(argv[1], (write_it ? O_WRONLY : O_RDONLY) | O_DIRECT);
	if (fd < 0) {
		perror("scatterio: open");
		return 1;
	}
	if (write_it) {
		f = open(argv[4], O_RDONLY);
		if (f < 0 || read(f, data, sizeof(data)) != (ssize_t)sizeof(data)) {
			fprintf(stderr, "scatterio: %s: not 4096 bytes\n", argv[4]);
			return 1;
		}
		close(f);
		for (i = 0; i < PIECES; i++)
			memcpy(iov[i].iov_base, data + i * PIECE, PIECE);
		n = pwritev(fd, iov, PIECES, at);
	} else {
		n = preadv(fd, iov, PIECES, at);
	}
	if (n != (ssize_t)sizeof(data)) {
		fprintf(stderr, "scatterio: %s of 4096 bytes: %zd\n", argv[2], n);
		return 1;
	}
	close(fd);
	if (!write_it) {
		for (i = 0; i < PIECES; i++)
			memcpy(data + i * PIECE, iov[i].iov_base, PIECE);
		f = open(argv[4], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (f < 0 || write(f, data, sizeof(data)) != (ssize_t)sizeof(data)) {
			fprintf(stderr, "scatterio: %s: not written\n", argv[4]);
			return 1;
		}
		close(f);
	}
	return 0;
}
