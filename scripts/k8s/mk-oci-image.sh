#!/usr/bin/env bash
# mk-oci-image.sh OUT.tar IMAGE_NAME ROOTFS_DIR ENTRYPOINT_JSON [USER]
# Packs ROOTFS_DIR as a single-layer OCI image archive that `ctr images
# import` takes: the images the test cluster needs (its pause image, the
# agent image) are made here, without a registry or a Docker build.
set -euo pipefail
out=$1 name=$2 rootfs=$3 entry=$4 user=${5:-}
w=$(mktemp -d); trap 'rm -rf "$w"' EXIT
mkdir -p "$w/blobs/sha256"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$rootfs" -cf "$w/layer.tar" .
ld=$(sha256sum "$w/layer.tar" | cut -d' ' -f1); ls=$(stat -c %s "$w/layer.tar"); mv "$w/layer.tar" "$w/blobs/sha256/$ld"
cfg=$(printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":%s,"User":"%s","WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' "$entry" "$user" "$ld")
cd_=$(printf '%s' "$cfg" | sha256sum | cut -d' ' -f1); printf '%s' "$cfg" > "$w/blobs/sha256/$cd_"
man=$(printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%d},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%d}]}' "$cd_" "${#cfg}" "$ld" "$ls")
md=$(printf '%s' "$man" | sha256sum | cut -d' ' -f1); printf '%s' "$man" > "$w/blobs/sha256/$md"
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%d,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"},"platform":{"architecture":"amd64","os":"linux"}}]}' "$md" "${#man}" "$name" "${name##*:}" > "$w/index.json"
printf '{"imageLayoutVersion":"1.0.0"}' > "$w/oci-layout"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$w" -cf "$out" oci-layout index.json blobs
