"""memplan's predictions: closed-form and fitted models of peak training memory."""
