"""wkw-viewer: browse, compare and inspect webKNOSSOS-wrapper (WKW) volume datasets.

Layers, arrows pointing down only: ``app``/``cli`` -> ``ui`` (all Qt) -> ``core`` (Qt-free state,
loading, comparison) -> ``format`` (Qt-free on-disk formats).  See DESIGN.md in the project's
shared documents and the README.
"""

__version__ = "0.1.0"
