/* MPI ping-pong between two ranks: the same kernel and output as pingpong.py, in C for
 * sites without mpi4py.
 *
 * Sizes 0 B, then powers of two up to --max-bytes; each size is warmed up, then timed in
 * --batches batches whose repetitions are scaled so a batch takes about --target-seconds;
 * the fastest batch is reported (see pingpong.py for why). Rank 0 prints one JSON line per
 * size, the same as pingpong.py, so report.py reads either:
 *     {"bytes": 1024, "repetitions": 2000, "half_round_trip_s": 1.9e-06, "batches": 3}
 *
 * Build: mpicc -O2 -std=c99 -o pingpong pingpong.c
 * Run:   mpiexec -n 2 ./pingpong [--max-bytes N] [--target-seconds S] [--batches N]
 *                                [--max-repetitions N] [--out FILE]
 * With --out, rank 0 also writes the JSON lines to FILE (as pingpong.py does).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PING = 1, PONG = 2 };

struct options {
    long max_bytes;
    double target_seconds;
    int batches;
    int max_repetitions;
    const char *out;
};

/* Abort every rank on an MPI error (the default handler does too; this one says where). */
static void check(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, text, &len);
        fprintf(stderr, "pingpong: %s failed: %s\n", what, text);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* `reps` round trips of `n` bytes; returns this rank's elapsed seconds. */
static double exchange(int rank, char *buf, int n, int reps)
{
    check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    double start = MPI_Wtime();
    for (int i = 0; i < reps; i++) {
        if (rank == 0) {
            check(MPI_Send(buf, n, MPI_BYTE, 1, PING, MPI_COMM_WORLD), "MPI_Send");
            check(MPI_Recv(buf, n, MPI_BYTE, 1, PONG, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  "MPI_Recv");
        } else {
            check(MPI_Recv(buf, n, MPI_BYTE, 0, PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  "MPI_Recv");
            check(MPI_Send(buf, n, MPI_BYTE, 0, PONG, MPI_COMM_WORLD), "MPI_Send");
        }
    }
    return MPI_Wtime() - start;
}

static double min2(double a, double b) { return a < b ? a : b; }

/* Repetitions for a batch of about `target` seconds (rank 0 decides, both agree). The
 * probe doubles until the faster of two probes lasts a quarter of the target, so one
 * preemption cannot skew the estimate much. */
static int calibrate(int rank, char *buf, int n, double target, int most)
{
    int probe = 4, done = 0, reps = 0;
    double elapsed = 0.0;
    for (;;) {
        elapsed = min2(exchange(rank, buf, n, probe), exchange(rank, buf, n, probe));
        done = elapsed >= target / 4 || probe >= most;
        check(MPI_Bcast(&done, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
        if (done)
            break;
        probe *= 2;
    }
    double per = elapsed / probe > 1e-8 ? elapsed / probe : 1e-8;
    double want = target / per;
    reps = want < most ? (int)want : most;
    if (reps < 10)
        reps = 10;
    check(MPI_Bcast(&reps, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
    return reps;
}

/* The shortest %g form that reads back as `x`: what Python's json.dumps prints for the
 * values seen here (no integral floats, magnitudes below 1e16). */
static void shortest(double x, char *out, size_t size)
{
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(out, size, "%.*g", digits, x);
        if (strtod(out, NULL) == x)
            return;
    }
}

static int parse(int argc, char **argv, struct options *opt)
{
    for (int i = 1; i < argc; i++) {
        const char *name = argv[i];
        if (i + 1 >= argc)
            return -1;
        const char *value = argv[++i];
        char *end = NULL;
        if (strcmp(name, "--out") == 0) {
            if (*value == '\0')
                return -1;
            opt->out = value;
            continue;
        }
        if (strcmp(name, "--max-bytes") == 0)
            opt->max_bytes = strtol(value, &end, 10);
        else if (strcmp(name, "--target-seconds") == 0)
            opt->target_seconds = strtod(value, &end);
        else if (strcmp(name, "--batches") == 0)
            opt->batches = (int)strtol(value, &end, 10);
        else if (strcmp(name, "--max-repetitions") == 0)
            opt->max_repetitions = (int)strtol(value, &end, 10);
        else
            return -1;
        if (end == value || *end != '\0')
            return -1;
    }
    if (opt->max_bytes < 0 || opt->max_bytes > (1L << 30) || opt->target_seconds <= 0 ||
        opt->batches < 1 || opt->max_repetitions < 1)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    struct options opt = {1L << 20, 0.004, 15, 20000, NULL};
    int rank = 0, size = 0;
    check(MPI_Init(&argc, &argv), "MPI_Init");
    /* Return codes, not aborts, from here on: check() reports them itself. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
    if (parse(argc, argv, &opt) != 0) {
        if (rank == 0)
            fprintf(stderr, "usage: pingpong [--max-bytes N] [--target-seconds S] "
                            "[--batches N] [--max-repetitions N] [--out FILE]\n");
        MPI_Finalize();
        return 2;
    }
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "pingpong needs exactly 2 ranks, got %d\n", size);
        MPI_Finalize();
        return 2;
    }

    char *buf = malloc(opt.max_bytes > 0 ? (size_t)opt.max_bytes : 1);
    if (buf == NULL) {
        fprintf(stderr, "pingpong: cannot allocate %ld bytes\n", opt.max_bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(buf, 0x5a, opt.max_bytes > 0 ? (size_t)opt.max_bytes : 1);
    FILE *out = NULL;
    if (rank == 0 && opt.out != NULL && (out = fopen(opt.out, "w")) == NULL) {
        perror(opt.out);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long n = 0; n <= opt.max_bytes; n = n ? n * 2 : 1) {
        /* Warm-up: first touches of buffers and protocol set-up are not measured. */
        exchange(rank, buf, (int)n, 5);
        int reps = calibrate(rank, buf, (int)n, opt.target_seconds, opt.max_repetitions);
        double best = exchange(rank, buf, (int)n, reps);
        for (int b = 1; b < opt.batches; b++)
            best = min2(best, exchange(rank, buf, (int)n, reps));
        if (rank == 0) {
            char half[32];
            shortest(best / reps / 2, half, sizeof half);
            printf("{\"bytes\": %ld, \"repetitions\": %d, \"half_round_trip_s\": %s, "
                   "\"batches\": %d}\n", n, reps, half, opt.batches);
            fflush(stdout);
            if (out != NULL)
                fprintf(out, "{\"bytes\": %ld, \"repetitions\": %d, "
                             "\"half_round_trip_s\": %s, \"batches\": %d}\n",
                        n, reps, half, opt.batches);
        }
    }
    free(buf);
    if (out != NULL && fclose(out) != 0) {
        perror(opt.out);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    check(MPI_Finalize(), "MPI_Finalize");
    return 0;
}
