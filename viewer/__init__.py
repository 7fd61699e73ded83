"""wkw-viewer: browse, compare and inspect chunked volume datasets (WKW, webKnossos, N5, Zarr,
zfpc, OpenVDS; local or over HTTP and S3).

Layers, arrows pointing down only: ``app``/``cli`` -> ``ui`` (all Qt) -> ``core`` (Qt-free state,
loading, comparison) -> ``format`` (Qt-free on-disk formats).  See docs/architecture.md.
"""

__version__ = "0.1.0"
