/*
 * Internal: noticing fork().
 *
 * A child process inherits a pool's memory but none of its worker threads,
 * and possibly a mutex some other thread of the parent held. The child
 * handler bumps a generation counter; a pool remembers the generation it was
 * started in, and one from an older generation is never waited on or joined
 * again: its memory is freed and a new pool is started (attention/context.c).
 */
#ifndef SA_THREADS_FORK_H
#define SA_THREADS_FORK_H

/* Registers the pthread_atfork handler (once per process); call before
 * creating anything that must survive a fork. */
void sa_fork_watch(void);

/* How many fork()s separate this process from the first one that called
 * sa_fork_watch: 0 in that process, 1 in its children, and so on. */
unsigned sa_fork_generation(void);

#endif
