/* txn/store.c - placeholder, being written. */
