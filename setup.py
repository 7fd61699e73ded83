"""The optional native kernels (``viewer/format/native``): built where a C compiler exists;
without one the install goes on and the program reads through its Python paths."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("viewer.format.native._kernel",
                             sources=["viewer/format/native/wkwbox.c",
                                      "viewer/format/native/chunkbatch.c",
                                      "viewer/format/native/cseg.c"],
                             extra_compile_args=["-O3"], optional=True),
                   # Its own library: it includes Python.h, which a machine may lack where
                   # it has a compiler; the other kernels are plain C.
                   Extension("viewer.format.native._planes",
                             sources=["viewer/format/native/planes.c"],
                             extra_compile_args=["-O3"], optional=True),
                   Extension("viewer.format.native._heads",
                             sources=["viewer/format/native/heads.c"],
                             extra_compile_args=["-O2"], optional=True)])
