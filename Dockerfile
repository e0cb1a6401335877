# syntax=docker/dockerfile:1
#
# The sentinel's container image, a drop-in for the Go sentinel's: the binary at /app/sentinel,
# entrypoint /app/sentinel with `serve` as the default command (the Go chart's Deployment passes
# `serve --config=/etc/hyperfleet/config.yaml`, which is also the default config path), user
# 65532:65532, CA certificates for TLS to the API or the broker. It writes no file, so it runs
# under the chart's readOnlyRootFilesystem: true.
#
#   docker build --build-arg GIT_SHA=$(git rev-parse --short=12 HEAD) \
#     --build-arg SOURCE_DATE_EPOCH=$(git log -1 --format=%ct) -t hyperfleet-sentinel-rs .
#
# The release build is stripped here only (the release profile keeps line tables for local
# profiling, see docs/performance.md): a 28.8 MiB binary instead of 104 MiB.

ARG RUST_IMAGE=docker.io/library/rust:1.95-bookworm
# Debian 12 with glibc, libgcc, CA certificates and the `nonroot` user (uid 65532); the builder
# is Debian 12 too, so the dynamically linked binary finds the glibc it was built against.
ARG BASE_IMAGE=gcr.io/distroless/cc-debian12:nonroot

FROM ${RUST_IMAGE} AS builder
# The commit and build date `sentinel version` prints (build.rs reads them).
ARG GIT_SHA=unknown
ARG SOURCE_DATE_EPOCH=
WORKDIR /build
COPY Cargo.toml Cargo.lock build.rs ./
COPY grammar grammar
COPY src src
# Cargo.toml names the benches; the manifest does not load without their files.
COPY benches benches
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/build/target \
    SENTINEL_COMMIT="${GIT_SHA}" \
    CARGO_PROFILE_RELEASE_STRIP=symbols \
    CARGO_PROFILE_RELEASE_DEBUG=false \
    cargo build --release --locked --bin sentinel \
 && install -D -m 0755 target/release/sentinel /out/sentinel

FROM ${BASE_IMAGE}
WORKDIR /app
COPY --from=builder /out/sentinel /app/sentinel
USER 65532:65532
# 8080: /healthz and /readyz; 9090: /metrics (the serve defaults the chart's probes use).
EXPOSE 8080 9090
ENTRYPOINT ["/app/sentinel"]
CMD ["serve"]

LABEL name="hyperfleet-sentinel" \
      summary="HyperFleet Sentinel (Rust) - polls the HyperFleet API, decides with compiled CEL rules, publishes CloudEvents" \
      org.opencontainers.image.licenses="Apache-2.0"
