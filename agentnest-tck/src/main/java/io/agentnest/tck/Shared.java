package io.agentnest.tck;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * A {@code Sandbox} parameter with this annotation is one sandbox shared by the tests of a class
 * (cheap areas: exec, sessions, files, streaming); without it each test gets a fresh sandbox,
 * destroyed after the test. Tests on a shared sandbox use names of their own.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.PARAMETER)
public @interface Shared {}
