// SPDX-License-Identifier: GPL-2.0
/*
 * pktcap: print the RoCE v2 packets (UDP port 4791, IPv4 or IPv6) seen on
 * one interface, one per line as hex of the IP datagram, for the selftests
 * that compare our packets with the kernel's rdma_rxe.
 *
 *   pktcap IFNAME COUNT SECONDS
 *
 * Stops after COUNT packets or SECONDS, whichever comes first. Built
 * static by scripts/initramfs.sh (the guest has no compiler).
 */
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ROCE_PORT 4791

/* Offset of the UDP header in an IP datagram, or -1 if it is not UDP. */
static int udp_offset(const unsigned char *p, size_t n)
{
	if (n >= 20 && (p[0] >> 4) == 4 && p[9] == 17)
		return (p[0] & 0xf) * 4;
	if (n >= 40 && (p[0] >> 4) == 6 && p[6] == 17)
		return 40;
	return -1;
}

int main(int argc, char **argv)
{
	unsigned char buf[65536];
	struct sockaddr_ll sll = { 0 };
	long count, seconds, seen = 0;
	time_t end;
	int fd;

	if (argc != 4) {
		fprintf(stderr, "usage: %s IFNAME COUNT SECONDS\n", argv[0]);
		return 2;
	}
	count = atol(argv[2]);
	seconds = atol(argv[3]);
	fd = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_ALL));
	if (fd < 0) {
		perror("socket");
		return 1;
	}
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = if_nametoindex(argv[1]);
	if (!sll.sll_ifindex || bind(fd, (struct sockaddr *)&sll, sizeof(sll))) {
		perror(argv[1]);
		return 1;
	}
	end = time(NULL) + seconds;
	while (seen < count && time(NULL) < end) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		struct sockaddr_ll from;
		socklen_t fl = sizeof(from);
		ssize_t n;
		int off;

		if (poll(&pfd, 1, 200) <= 0)
			continue;
		n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
		if (n <= 0)
			continue;
		/* Each packet on lo is seen twice (out and in): keep one. */
		if (from.sll_pkttype == PACKET_OUTGOING)
			continue;
		off = udp_offset(buf, n);
		if (off < 0 || off + 8 > n || ((buf[off + 2] << 8) | buf[off + 3]) != ROCE_PORT)
			continue;
		for (ssize_t i = 0; i < n; i++)
			printf("%02x", buf[i]);
		printf("\n");
		fflush(stdout);
		seen++;
	}
	return 0;
}
