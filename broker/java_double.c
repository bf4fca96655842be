/*
 * java_double.c - Java's Double.toString (java_double.h).
 */
#include "broker/java_double.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int brk_java_double(double v, char *buf, size_t cap)
{
	if (isnan(v) || isinf(v) || v == 0)
		return snprintf(buf, cap, "%s",
				isnan(v) ? "NaN"
				: isinf(v) ? (v > 0 ? "Infinity" : "-Infinity")
				: signbit(v) ? "-0.0" : "0.0");
	/* the fewest significant digits, at least two, that read back as v
	 * ("d.ddde+X"; two digits as Java keeps them: 4.9E-324, not 5.0E-324) */
	char e[40];
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(e, sizeof(e), "%.*e", prec, v);
		if (strtod(e, NULL) == v)
			break;
	}
	const char *p = e;
	bool neg = *p == '-';
	if (neg)
		p++;
	char digits[24];
	int n = 0;
	for (; *p && *p != 'e' && n < (int)sizeof(digits) - 1; p++)
		if (*p >= '0' && *p <= '9')
			digits[n++] = *p;
	while (n > 1 && digits[n - 1] == '0')
		n--;
	digits[n] = '\0';
	int exp = *p == 'e' ? atoi(p + 1) : 0;

	char out[64];
	int o = 0;
	if (neg)
		out[o++] = '-';
	double a = v < 0 ? -v : v;
	if (a >= 1e-3 && a < 1e7) {
		if (exp >= 0) {
			for (int i = 0; i <= exp; i++)
				out[o++] = i < n ? digits[i] : '0';
			out[o++] = '.';
			if (n > exp + 1)
				for (int i = exp + 1; i < n; i++)
					out[o++] = digits[i];
			else
				out[o++] = '0';
		} else {
			out[o++] = '0';
			out[o++] = '.';
			for (int i = 0; i < -exp - 1; i++)
				out[o++] = '0';
			for (int i = 0; i < n; i++)
				out[o++] = digits[i];
		}
		out[o] = '\0';
	} else {
		out[o++] = digits[0];
		out[o++] = '.';
		if (n > 1)
			for (int i = 1; i < n; i++)
				out[o++] = digits[i];
		else
			out[o++] = '0';
		snprintf(out + o, sizeof(out) - (size_t)o, "E%d", exp);
	}
	return snprintf(buf, cap, "%s", out);
}
