/*
 * java_double.h - a double as Java's Double.toString writes it: how Kafka
 * writes a DOUBLE quota into an entity's config map (ZooKeeper mode,
 * AdminZkClient) and how kafka-configs.sh prints quotas. Shared by the
 * broker (quota/keys.c) and samsa-admin (through libpeer.la).
 */
#ifndef SAMSA_BROKER_JAVA_DOUBLE_H
#define SAMSA_BROKER_JAVA_DOUBLE_H

#include <stddef.h>

/* Room for the longest form ("-2.2250738585072014E-308") and its NUL. */
#define BRK_JAVA_DOUBLE_MAX 32

/* v into buf (cap bytes, always terminated when cap > 0; a short buffer
 * truncates): "NaN", "Infinity", "-Infinity", "0.0", "-0.0"; for 1e-3 <=
 * |v| < 1e7 a plain decimal with at least one digit after the point
 * ("1024.0", "12.5"); else computerized scientific notation ("1.0E7",
 * "1.0E-4"). The digits are the fewest (at least two) that read back as v,
 * as JDK 19+ chooses them (older JDKs print a few values with more digits:
 * 1.0E23 as 9.999999999999999E22). Returns the length of the whole text
 * (not counting the NUL), as snprintf does. */
int brk_java_double(double v, char *buf, size_t cap);

#endif
