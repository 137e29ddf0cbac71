# Build stage: compile a release binary.
FROM rust:1.89-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock build.rs README.md ./
COPY src ./src
COPY benches ./benches
# `agentproxy docs` serves these pages from the binary.
COPY docs ./docs
RUN cargo build --release --locked --bin agentproxy

# Runtime stage: a small image running as a non-root user.
FROM debian:bookworm-slim
RUN useradd --uid 10001 --create-home agentproxy
COPY --from=build /src/target/release/agentproxy /usr/local/bin/agentproxy
USER agentproxy
WORKDIR /work
ENTRYPOINT ["agentproxy"]
CMD ["--help"]
