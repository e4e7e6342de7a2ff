/*
 * Swagger UI over /openapi.json, all from hookpost (no CDN). The validator badge is off: it would
 * send the document to an outside service.
 */
window.addEventListener('DOMContentLoaded', () => {
  window.ui = window.SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    validatorUrl: null,
    tryItOutEnabled: false,
    persistAuthorization: false,
    docExpansion: 'list',
    defaultModelsExpandDepth: 0,
  });
});
