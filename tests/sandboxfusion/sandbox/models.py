"""Just enough of pydantic's BaseModel for SandboxFusion's tests: fields
with defaults, nested models, model_dump(), model_dump_json()."""
import copy
import enum
import json


class Model:
    FIELDS = {}  # name -> default (REQUIRED: must be given)
    NESTED = {}  # name -> model class (a list of them when in a 1-tuple)

    def __init__(self, **kw):
        for name, dflt in self.FIELDS.items():
            if name in kw:
                v = kw[name]
            elif dflt is REQUIRED:
                raise TypeError("%s: field %r is required" % (type(self).__name__, name))
            else:
                v = copy.deepcopy(dflt)
            setattr(self, name, self._convert(name, v))

    def _convert(self, name, v):
        cls = self.NESTED.get(name)
        if v is None or cls is None:
            return v
        if isinstance(cls, tuple):
            return [c if isinstance(c, Model) else cls[0](**c) for c in v]
        if isinstance(cls, type) and issubclass(cls, enum.Enum):
            return cls(v)
        return v if isinstance(v, Model) else cls(**v)

    def model_dump(self):
        def dump(v):
            if isinstance(v, Model):
                return v.model_dump()
            if isinstance(v, list):
                return [dump(x) for x in v]
            if isinstance(v, enum.Enum):
                return v.value
            return v
        return {k: dump(getattr(self, k)) for k in self.FIELDS}

    def model_dump_json(self, indent=None):
        return json.dumps(self.model_dump(), indent=indent)

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__,
                           ", ".join("%s=%r" % (k, getattr(self, k)) for k in self.FIELDS))


class _Required:
    def __repr__(self):
        return "REQUIRED"


REQUIRED = _Required()
