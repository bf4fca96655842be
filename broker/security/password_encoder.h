/*
 * password_encoder.h - dynamic password configs stored encrypted, in the
 * form Kafka's PasswordEncoder (ZooKeeper mode, kafka.utils.
 * EncryptingPasswordEncoder) writes them, so a Kafka broker sharing the
 * ZooKeeper reads what this broker stores and the other way round.
 *
 * The stored value is a comma-separated map of key:value pairs (any order;
 * Kafka's CoreUtils.parseCsvMap: split on ",", each pair at its last ":",
 * both sides trimmed, unknown keys ignored, a repeated key's last value
 * wins):
 *   keyFactoryAlgorithm   PBKDF2WithHmacSHA512 (or ...SHA384, SHA256,
 *                         SHA224, SHA1)
 *   cipherAlgorithm       AES/CBC/PKCS5Padding, AES/CTR/NoPadding or
 *                         AES/GCM/NoPadding (case-insensitive, as Java's)
 *   keyLength             key bits: 128, 192 or 256
 *   salt                  base64 of random bytes (256 when we encode)
 *   iterations            PBKDF2 iterations
 *   encryptedPassword     base64 of the ciphertext (GCM: with its tag)
 *   passwordLength        the password's length in UTF-16 units (Java's
 *                         String.length), checked after decryption
 *   initializationVector  base64 of the IV (16 random bytes; GCM 12)
 *   authenticationTagLength  GCM only: tag bits
 * The key is PBKDF2-HMAC(secret as UTF-8, salt, iterations, keyLength / 8
 * bytes) (Java's PBEKeySpec with a PBKDF2 SecretKeyFactory); the password
 * is encrypted as UTF-8. Kafka's broker keys that choose the encoding:
 * password.encoder.secret, .keyfactory.algorithm (default
 * PBKDF2WithHmacSHA512), .cipher.algorithm (AES/CBC/PKCS5Padding),
 * .key.length (128), .iterations (4096, at least 1024); decoding uses what
 * the stored value names, whatever the broker's keys say.
 *
 * OpenSSL does the cryptography (PKCS5_PBKDF2_HMAC, EVP ciphers,
 * RAND_bytes). Plain text passwords and derived keys are wiped before
 * their memory is freed. Nothing here logs.
 */
#ifndef SAMSA_BROKER_SECURITY_PASSWORD_ENCODER_H
#define SAMSA_BROKER_SECURITY_PASSWORD_ENCODER_H

#include <stddef.h>

/* What encoding uses (Kafka's password.encoder.* keys). */
typedef struct brk_password_encoder {
	const char *secret;               /* not owned; non-empty */
	const char *keyfactory_algorithm; /* not owned; NULL: PBKDF2WithHmacSHA512 */
	const char *cipher_algorithm;     /* not owned; NULL: AES/CBC/PKCS5Padding */
	int key_length;                   /* bits; 0: 128 */
	int iterations;                   /* 0: 4096 */
} brk_password_encoder;

/* Kafka's lower bound of password.encoder.iterations. */
#define BRK_PASSWORD_MIN_ITERATIONS 1024
/* The most iterations a stored value may ask for when decoding (a bound
 * on the work a bad stored value can cause; Kafka's own values are
 * thousands). */
#define BRK_PASSWORD_MAX_ITERATIONS (1 << 22)
/* The longest stored value decoded (bytes). */
#define BRK_PASSWORD_MAX_ENCODED (1 << 20)

/*
 * Whether e can encode: a known key factory and cipher, a key length the
 * cipher takes, iterations at least BRK_PASSWORD_MIN_ITERATIONS and at most
 * BRK_PASSWORD_MAX_ITERATIONS, a non-empty secret. 0, or -1 with the reason
 * (naming the password.encoder.* key) in err.
 */
int brk_password_encoder_check(const brk_password_encoder *e, char *err, size_t errsize);

/*
 * password (NUL-terminated UTF-8) encrypted with a fresh random salt and IV
 * into Kafka's stored form: malloc'd (the caller frees), or NULL with the
 * reason in err (bad settings, out of memory, no randomness).
 */
char *brk_password_encode(const brk_password_encoder *e, const char *password, char *err,
			  size_t errsize);

/*
 * The password in encoded (len bytes, need not be NUL-terminated),
 * decrypted with secret: malloc'd and NUL-terminated (free it with
 * brk_password_free), or NULL with the reason in err: not Kafka's form, an
 * algorithm not served, iterations above max_iterations, a wrong secret
 * (padding or GCM tag that does not check, or a length that does not
 * match), a result that is not UTF-8 or holds a NUL. Never crashes on any
 * input; the work is bounded by len and max_iterations.
 */
char *brk_password_decode_bounded(const char *secret, const char *encoded, size_t len,
				  int max_iterations, char *err, size_t errsize);

/* brk_password_decode_bounded of a NUL-terminated value with
 * BRK_PASSWORD_MAX_ITERATIONS. */
char *brk_password_decode(const char *secret, const char *encoded, char *err, size_t errsize);

/* Wipe and free a decoded password (NULL: nothing). */
void brk_password_free(char *password);

#endif
