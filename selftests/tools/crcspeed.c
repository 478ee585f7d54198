// SPDX-License-Identifier: GPL-2.0
/*
 * crcspeed: what the CRC-32 of a RoCE v2 packet costs on this CPU, by the
 * methods a kernel could use for the ICRC, beside a copy of the same bytes.
 *
 *   crcspeed
 *
 * Prints, for each method, "bench: guest crc32 METHOD BYTES ITERATIONS NS"
 * (NS: the fastest of three batches of ITERATIONS checksums of one
 * 4112-byte packet, BTH + 4 KiB payload + ICRC), the form of the other
 * "bench:" lines of make bench (scripts/bench-table.awk prints them):
 *
 *   byte     one table of 256 entries, a byte a step;
 *   slice8   eight tables, eight bytes a step: the kernel's crc32_le in
 *            the benchmark kernel (CONFIG_CRC32_SLICEBY8), used by both
 *            stacks' ICRC;
 *   slice16  sixteen tables, sixteen bytes a step;
 *   pclmul   folding with carry-less multiplication (PCLMULQDQ), 64
 *            bytes a step, what crc32-pclmul does on hardware; only where
 *            the CPU has the instruction;
 *   memcpy   a copy of the packet, for scale.
 *
 * Every method's CRC is checked against the byte-wise one: a mismatch
 * exits 1. Under TCG the answer differs from hardware's: table loads are
 * emulated memory accesses and PCLMULQDQ an emulated loop, so which
 * method is fastest is measured here, in the guest, not assumed.
 */
#include <cpuid.h>
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define POLY 0xedb88320u
#define PACKET 4112
#define ITERATIONS 500

static uint32_t tables[16][256];

static void make_tables(void)
{
	for (int i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (POLY & -(c & 1));
		tables[0][i] = c;
	}
	for (int t = 1; t < 16; t++)
		for (int i = 0; i < 256; i++)
			tables[t][i] = (tables[t - 1][i] >> 8) ^ tables[0][tables[t - 1][i] & 0xff];
}

static uint32_t crc_byte(uint32_t c, const uint8_t *p, size_t n)
{
	while (n--)
		c = (c >> 8) ^ tables[0][(c ^ *p++) & 0xff];
	return c;
}

/* One table lookup per byte of the 32-bit word @w, the k-th table first. */
static uint32_t word(uint32_t w, int k)
{
	return tables[k][w & 0xff] ^ tables[k - 1][(w >> 8) & 0xff] ^
	       tables[k - 2][(w >> 16) & 0xff] ^ tables[k - 3][w >> 24];
}

static uint32_t crc_slice8(uint32_t c, const uint8_t *p, size_t n)
{
	for (; n >= 8; p += 8, n -= 8) {
		uint32_t w[2];

		memcpy(w, p, 8);
		c = word(w[0] ^ c, 7) ^ word(w[1], 3);
	}
	return crc_byte(c, p, n);
}

static uint32_t crc_slice16(uint32_t c, const uint8_t *p, size_t n)
{
	for (; n >= 16; p += 16, n -= 16) {
		uint32_t w[4];

		memcpy(w, p, 16);
		c = word(w[0] ^ c, 15) ^ word(w[1], 11) ^ word(w[2], 7) ^ word(w[3], 3);
	}
	return crc_byte(c, p, n);
}

/*
 * Folding: four 128-bit lanes, each multiplied forward by x^(512±32)
 * mod P (the bit-reflected constants) and added to the next 64 bytes;
 * then the lanes folded into one by x^(128±32), and the last 16 bytes of
 * state reduced with the byte-wise table (slower than a Barrett
 * reduction, but once per packet).
 */
__attribute__((target("pclmul,sse4.1")))
static __m128i fold(__m128i x, __m128i k, __m128i next)
{
	return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
					   _mm_clmulepi64_si128(x, k, 0x11)), next);
}

__attribute__((target("pclmul,sse4.1")))
static uint32_t crc_pclmul(uint32_t c, const uint8_t *p, size_t n)
{
	const __m128i k512 = _mm_set_epi64x(0x1c6e41596ULL, 0x154442bd4ULL);
	const __m128i k128 = _mm_set_epi64x(0x0ccaa009eULL, 0x1751997d0ULL);
	__m128i x[4];
	uint8_t state[16];

	if (n < 64)
		return crc_slice8(c, p, n);
	for (int i = 0; i < 4; i++)
		x[i] = _mm_loadu_si128((const void *)(p + 16 * i));
	x[0] = _mm_xor_si128(x[0], _mm_cvtsi32_si128(c));
	for (p += 64, n -= 64; n >= 64; p += 64, n -= 64)
		for (int i = 0; i < 4; i++)
			x[i] = fold(x[i], k512, _mm_loadu_si128((const void *)(p + 16 * i)));
	for (int i = 1; i < 4; i++)
		x[0] = fold(x[0], k128, x[i]);
	for (; n >= 16; p += 16, n -= 16)
		x[0] = fold(x[0], k128, _mm_loadu_si128((const void *)p));
	_mm_storeu_si128((void *)state, x[0]);
	return crc_byte(crc_byte(0, state, 16), p, n);
}

static uint8_t packet[PACKET], copy[PACKET];

static uint32_t do_memcpy(uint32_t c, const uint8_t *p, size_t n)
{
	memcpy(copy, p, n);
	__asm__ volatile("" : : "r"(copy) : "memory");
	return c;
}

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* The fastest of three batches of @ITERATIONS calls, in ns. */
static long long time_it(uint32_t (*fn)(uint32_t, const uint8_t *, size_t))
{
	long long best = -1;

	for (int b = 0; b < 3; b++) {
		volatile uint32_t sink = 0;
		long long t0 = now_ns(), t;

		for (int i = 0; i < ITERATIONS; i++)
			sink += fn(~0u, packet, PACKET);
		t = now_ns() - t0;
		if (best < 0 || t < best)
			best = t;
	}
	return best;
}

int main(void)
{
	static const struct {
		const char *name;
		uint32_t (*fn)(uint32_t, const uint8_t *, size_t);
		int needs_pclmul;
	} methods[] = {
		{ "byte", crc_byte, 0 },
		{ "slice8", crc_slice8, 0 },
		{ "slice16", crc_slice16, 0 },
		{ "pclmul", crc_pclmul, 1 },
		{ "memcpy", do_memcpy, 0 },
	};
	unsigned int a, b, c, d;
	int pclmul;
	uint32_t want;

	pclmul = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_PCLMUL) && (c & bit_SSE4_1);
	make_tables();
	for (int i = 0; i < PACKET; i++)
		packet[i] = (uint8_t)(i * 7 + (i >> 5));
	want = crc_byte(~0u, packet, PACKET);
	for (size_t m = 0; m < sizeof(methods) / sizeof(methods[0]); m++) {
		if (methods[m].needs_pclmul && !pclmul)
			continue;
		if (methods[m].fn != do_memcpy && methods[m].fn(~0u, packet, PACKET) != want) {
			fprintf(stderr, "crcspeed: %s computes a wrong CRC\n", methods[m].name);
			return 1;
		}
		printf("bench: guest crc32 %s %d %d %lld\n", methods[m].name, PACKET, ITERATIONS,
		       time_it(methods[m].fn));
	}
	return 0;
}
