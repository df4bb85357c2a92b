# syntax=docker/dockerfile:1
# Build: compile evictor into one executable on the official Deno image.
FROM denoland/deno:2.9.6 AS build
WORKDIR /src
COPY . .
# Both executables: evictor (the operator) and kubectl-evictor (the plugin).
RUN deno task compile --output /out

# Run: distroless cc (glibc, libgcc; no shell), non-root, read-only root FS
# (set readOnlyRootFilesystem in the pod, as manifests/manager does, with an
# emptyDir at /tmp: the binary keeps its V8 code cache in $TMPDIR).
FROM gcr.io/distroless/cc-debian12:nonroot
LABEL org.opencontainers.image.title="evictor" \
      org.opencontainers.image.description="Drains OpenStack hypervisors from Kubernetes: parallel, trait-aware live migration with a validating webhook" \
      org.opencontainers.image.source="https://github.com/evictor/evictor" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/evictor /usr/local/bin/evictor
USER 65532:65532
EXPOSE 8080 9443
ENTRYPOINT ["/usr/local/bin/evictor"]
CMD ["run"]
