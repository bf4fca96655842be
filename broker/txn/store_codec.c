/* txn/store_codec.c - placeholder, being written. */
