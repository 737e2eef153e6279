"""A fake ``gs://`` for tests, offline: every ``gs://bucket/key`` is the local file ``<root>/bucket/key``.

Installed in a worker process before training starts.  It swaps the storage layers *below* t2t_jax — epath's
backend (an fsspec filesystem rooted at ``root``) and the tensorstore kvstore that orbax builds for gs://
paths (a local file driver) — so the code under test sees and must keep real ``gs://`` URLs end to end.
"""

import os

PREFIX = "gs://"


def install(root: str) -> None:
    import fsspec
    from etils.epath import gpath
    from fsspec.implementations.dirfs import DirFileSystem
    from fsspec.implementations.local import LocalFileSystem
    from orbax.checkpoint._src.path import gcs_utils

    class FakeGCS(DirFileSystem):
        protocol = ("gs", "gcs")

        def __init__(self, *args, **kwargs):
            super().__init__(path=root, fs=LocalFileSystem(auto_mkdir=True))

        def _join(self, path):
            if isinstance(path, str):
                return super()._join(path.removeprefix(PREFIX))
            return [self._join(p) for p in path]

        def _relpath(self, path):  # results without the protocol, as gcsfs gives them
            if isinstance(path, str):
                return super()._relpath(path).lstrip("/")
            return [self._relpath(p) for p in path]

    fsspec.register_implementation("gs", FakeGCS, clobber=True)
    fsspec.register_implementation("gcs", FakeGCS, clobber=True)
    gpath._is_tf_installed = lambda: False  # epath then takes its fsspec backend for gs://

    def local_kvstore(path: str) -> dict:
        key = str(path).split("gs:/", 1)[-1].lstrip("/")  # "gs://b/k", or "gs:/b/k" after a normpath
        return {"driver": "file", "path": os.path.join(root, key)}

    gcs_utils.get_kvstore_for_gcs = local_kvstore
    gcs_utils.is_hierarchical_namespace_enabled = lambda path: False
