#!/usr/bin/python3
"""Packs a root filesystem directory into an image archive, offline: one archive that is both an OCI image
layout (oci-layout, index.json, blobs/sha256/...) and a `docker save` archive (manifest.json naming the
same blobs), so that `ctr -n k8s.io images import` (which names the image from index.json's
io.containerd.image.name annotation) and `docker load` (from manifest.json's RepoTags) both read it.

One uncompressed layer holding the directory as it is (owners, modes, links; device nodes are refused:
an image has none). Deterministic: entries sorted, times and owners taken from the files.

    usage: oci_image.py ROOTFS NAME ARCHIVE [ENTRYPOINT...]
      NAME        the image's full name, e.g. gpuctk.test/probe:1
      ENTRYPOINT  the image's entrypoint (argv), none by default
"""
import hashlib
import io
import json
import os
import stat
import sys
import tarfile
import tempfile


def layer_tar(rootfs, out):
    """Writes the layer (a tar of rootfs's contents, paths relative to it) to the file object `out`."""
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for top, dirs, files in os.walk(rootfs):
            dirs.sort()
            for name in sorted(dirs + files):
                path = os.path.join(top, name)
                st = os.lstat(path)
                if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) or stat.S_ISFIFO(st.st_mode):
                    raise SystemExit(f"oci_image.py: {path}: a device node or FIFO has no place in an image")
                tar.add(path, arcname=os.path.relpath(path, rootfs), recursive=False)


def sha256_of_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest(), os.path.getsize(path)


def add_bytes(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def main(argv):
    if len(argv) < 4:
        raise SystemExit(__doc__)
    rootfs, name, archive = argv[1:4]
    entrypoint = argv[4:]
    with tempfile.TemporaryDirectory() as tmp:
        layer_path = os.path.join(tmp, "layer.tar")
        with open(layer_path, "wb") as out:
            layer_tar(rootfs, out)
        layer_hex, layer_size = sha256_of_file(layer_path)
        config = {
            "architecture": "amd64",
            "os": "linux",
            "config": {
                "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                **({"Entrypoint": entrypoint} if entrypoint else {}),
            },
            "rootfs": {"type": "layers", "diff_ids": ["sha256:" + layer_hex]},
        }
        config_bytes = json.dumps(config, sort_keys=True).encode()
        config_hex = hashlib.sha256(config_bytes).hexdigest()
        manifest = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": "sha256:" + config_hex, "size": len(config_bytes)},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                        "digest": "sha256:" + layer_hex, "size": layer_size}],
        }
        manifest_bytes = json.dumps(manifest, sort_keys=True).encode()
        manifest_hex = hashlib.sha256(manifest_bytes).hexdigest()
        index = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [{
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": "sha256:" + manifest_hex, "size": len(manifest_bytes),
                "platform": {"architecture": "amd64", "os": "linux"},
                "annotations": {"io.containerd.image.name": name,
                                "org.opencontainers.image.ref.name": name.rsplit(":", 1)[-1]},
            }],
        }
        docker = [{"Config": "blobs/sha256/" + config_hex, "RepoTags": [name],
                   "Layers": ["blobs/sha256/" + layer_hex]}]
        with tarfile.open(archive, "w") as tar:
            add_bytes(tar, "oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode())
            add_bytes(tar, "index.json", json.dumps(index, sort_keys=True).encode())
            add_bytes(tar, "manifest.json", json.dumps(docker).encode())
            add_bytes(tar, "blobs/sha256/" + config_hex, config_bytes)
            add_bytes(tar, "blobs/sha256/" + manifest_hex, manifest_bytes)
            tar.add(layer_path, arcname="blobs/sha256/" + layer_hex)


if __name__ == "__main__":
    main(sys.argv)
