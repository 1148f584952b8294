/* agefence version and the git revision it was built from (generated at every build by
 * cmake/version.cmake; "<version> (no git)" for a source tree without git). */
#ifndef AF_VERSION_H
#define AF_VERSION_H

extern const char af_version[];
extern const char af_git_revision[];
extern const char af_build[]; /* "<version> (git <revision>)" or "<version> (no git)" */

#endif
