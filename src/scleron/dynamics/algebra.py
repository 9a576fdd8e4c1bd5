"""The numeric algebra: the recursions evaluated on Python floats (the reference)."""
import math


class FloatAlgebra:
    sin = staticmethod(math.sin)
    cos = staticmethod(math.cos)
    tan = staticmethod(math.tan)
    exp = staticmethod(math.exp)
    log = staticmethod(math.log)
    sqrt = staticmethod(math.sqrt)
    atan = staticmethod(math.atan)

    @staticmethod
    def call(name, x, numeric):
        return numeric(x)

    def section(self, text):
        pass
