/*
 * fuzz_acl.c - libFuzzer target: the ACL decoders of controller/acl.h, fed
 * what a hostile or broken ZooKeeper client could have written under
 * Kafka's ACL paths.
 *
 * Input: byte 0 selects the decoder (modulo 3), the rest is the data:
 *   0 a resource's ACL znode (/kafka-acl/..., /kafka-acl-extended/...)
 *   1 a literal change notification (/kafka-acl-changes/acl_changes_N)
 *   2 an extended change notification (/kafka-acl-extended-changes/...)
 *
 * Beyond "no crash, no leak, no sanitizer report": what decodes is encoded
 * again, that encoding must decode to the same value, and encoding it once
 * more must give the same bytes. A break of that aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controller/acl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void znode(const char *s, size_t n)
{
	ctl_acl_entry *e, *e2;
	int32_t ne, ne2;
	if (ctl_acl_json_decode(s, n, &e, &ne) != 0)
		return;
	char *t1, *t2;
	size_t n1, n2;
	if (ctl_acl_json_encode(e, ne, &t1, &n1) != 0)
		abort();
	if (ctl_acl_json_decode(t1, n1, &e2, &ne2) != 0 || ne2 != ne)
		abort();
	for (int32_t i = 0; i < ne; i++)
		if (!ctl_acl_entry_eq(&e[i], &e2[i]))
			abort();
	if (ctl_acl_json_encode(e2, ne2, &t2, &n2) != 0 || n1 != n2 || memcmp(t1, t2, n1) != 0)
		abort();
	free(t1);
	free(t2);
	free(e);
	free(e2);
}

static void change(bool extended, const char *s, size_t n)
{
	int8_t type, pattern, type2, pattern2;
	char *name, *name2, *t1, *t2;
	size_t n1, n2;
	if (ctl_acl_change_decode(extended, s, n, &type, &pattern, &name) != 0)
		return;
	/* A literal notification read from the extended path is written back
	 * in the literal form: round trip through the form it encodes to. */
	if (ctl_acl_change_encode(type, pattern, name, &t1, &n1) != 0)
		abort();
	bool ext2 = pattern != CTL_ACL_PAT_LITERAL;
	if (ctl_acl_change_decode(ext2, t1, n1, &type2, &pattern2, &name2) != 0 ||
	    type2 != type || pattern2 != pattern || strcmp(name, name2) != 0)
		abort();
	if (ctl_acl_change_encode(type2, pattern2, name2, &t2, &n2) != 0 || n1 != n2 ||
	    memcmp(t1, t2, n1) != 0)
		abort();
	free(t1);
	free(t2);
	free(name);
	free(name2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *s = (const char *)data + 1;
	size_t n = size - 1;
	switch (data[0] % 3) {
	case 0:
		znode(s, n);
		break;
	case 1:
		change(false, s, n);
		break;
	default:
		change(true, s, n);
		break;
	}
	return 0;
}
