# syntax=docker/dockerfile:1
#
# abn as one compiled executable on a minimal, non-root runtime image.
#
#   docker build -t abn .
#   docker run -d --name abn -p 8080:8080 -v abn-data:/data --stop-timeout 30 \
#     -e ABN_PUBLIC_URL=https://abn.example.com abn
#   docker exec abn abn admin org create acme
#
# Configuration: the ABN_* variables (docs/configuration.md). docs/operations.md covers
# volumes, S3, health checks and upgrades.

# ---- Stage 1: compile ------------------------------------------------------------------------
FROM denoland/deno:2.9.6 AS build
WORKDIR /src

# Dependencies first: this layer is reused until deno.json or deno.lock change. --frozen fails
# the build when the lock file does not match deno.json.
COPY deno.json deno.lock ./
RUN deno install --frozen

COPY main.ts ./
COPY src ./src
# `deno task compile`: explicit --allow-* flags, the UI embedded with --include src/ui, output
# dist/abn. It downloads Deno's `denort` runtime from dl.deno.land on the first build; offline
# builders point DENORT_BIN at a local copy (docs/operations.md).
RUN deno task compile \
 && mkdir -p /out/data \
 && cp dist/abn /out/abn \
 && /out/abn --help 2>&1 | grep -q "upload FILE"

# ---- Stage 2: run ----------------------------------------------------------------------------
# glibc and libgcc (what the compiled binary links), CA certificates for HTTPS to S3, no shell,
# no package manager, user `nonroot` (uid 65532).
FROM gcr.io/distroless/cc-debian12:nonroot

COPY --from=build /out/abn /usr/local/bin/abn
# An empty /data owned by the runtime user: a new named volume starts with this ownership.
COPY --from=build --chown=65532:65532 /out/data /data

# GLIBC_TUNABLES: a fixed threshold for the allocator's own mappings, so that memory freed after a
# large upload goes back to the system (docs/operations.md, "The system allocator's threshold").
ENV ABN_DATA_DIR=/data \
    ABN_HOST=0.0.0.0 \
    ABN_PORT=8080 \
    GLIBC_TUNABLES=glibc.malloc.mmap_threshold=8388608

VOLUME ["/data"]
EXPOSE 8080
USER 65532:65532

# `abn healthcheck` asks http://127.0.0.1:$ABN_PORT/healthz (200 only when the database answers);
# the image has no curl.
HEALTHCHECK --interval=30s --timeout=6s --start-period=15s --retries=3 \
  CMD ["/usr/local/bin/abn", "healthcheck", "--quiet"]

# SIGTERM starts the graceful shutdown: in-flight uploads get up to 10 s. Give the container
# more than that before SIGKILL (docker run --stop-timeout 30, compose stop_grace_period: 30s).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/abn"]
CMD ["serve"]
