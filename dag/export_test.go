package dag

// For the external tests (package dag_test), which may import packages
// that import dag (internal/shapes).
var (
	ShapeOf     = shapeOf
	CheckOracle = checkOracle
	Rep         = rep
)

// StageShape is shape, for the external tests.
type StageShape = shape
