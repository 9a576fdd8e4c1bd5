"""The numeric algebra: the recursions evaluated on Python floats (the reference). Defined
with the algebra protocol in scleron.algebra."""
from ..algebra import FloatAlgebra  # noqa: F401
