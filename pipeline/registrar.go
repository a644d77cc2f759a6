package pipeline

import (
	"fmt"

	"github.com/plugkit-go/plugkit/kernel"
)

// RegistrarOf returns the Registrar of the plugin whose scope s is: the
// tools service, which the plugin must inject (ServiceName). It is the one
// place that turns the kernel's untyped service into the pipeline's type.
func RegistrarOf(s *kernel.Scope) (*Registrar, error) {
	svc, err := s.Service(ServiceName)
	if err != nil {
		return nil, err
	}
	reg, ok := svc.(*Registrar)
	if !ok {
		return nil, fmt.Errorf("%s: service %q is a %T, not the tools service", s.Name(), ServiceName, svc)
	}
	return reg, nil
}
